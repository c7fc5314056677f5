#!/usr/bin/env python3
"""Drives the server's page (GET /) in headless Chromium (run by tests/browser_page.rs).

usage: browser_page.py BASE_URL API_KEY MIC_WAV MIC_SECS FILE OUT_DIR

Chromium runs with a fake microphone that plays MIC_WAV once. The script:
1. records: clicks Record, waits MIC_SECS, clicks Stop, sends (with the key);
2. picks FILE with the file input, fills the dictionary, sends;
3. sends once more with a wrong key.
After each it reads the page's transcript, timing and status, and writes a screenshot
(record.png, page.png, wrong-key.png) into OUT_DIR. Prints one JSON object.

Selenium drives Debian's chromium through Debian's chromedriver (package
chromium-driver): both come from apt at the same version, and nothing is downloaded.
"""

import json
import sys
import time
from pathlib import Path

from selenium import webdriver
from selenium.webdriver.chrome.service import Service
from selenium.webdriver.common.by import By
from selenium.webdriver.support.ui import WebDriverWait

CHROMIUM = "/usr/bin/chromium"
CHROMEDRIVER = "/usr/bin/chromedriver"
TRANSCRIPTION_TIMEOUT = 300


def browser(mic_wav: Path) -> webdriver.Chrome:
    options = webdriver.ChromeOptions()
    options.binary_location = CHROMIUM
    for argument in [
        "--headless=new",
        "--no-sandbox",  # the tests may run as root
        "--disable-dev-shm-usage",
        "--window-size=1000,1100",
        "--use-fake-ui-for-media-stream",
        "--use-fake-device-for-media-stream",
        # `%noloop`: the file plays once, then the fake microphone is silent.
        f"--use-file-for-fake-audio-capture={mic_wav}%noloop",
    ]:
        options.add_argument(argument)
    return webdriver.Chrome(service=Service(executable_path=CHROMEDRIVER), options=options)


def result_of(driver: webdriver.Chrome, run: int, screenshot: Path) -> dict:
    """Waits until the page's send number `run` is done or failed, then reads the page
    and takes a screenshot."""

    def finished(d: webdriver.Chrome) -> bool:
        status = d.find_element(By.ID, "status")
        return status.get_attribute("data-run") == str(run) and status.get_attribute(
            "data-state"
        ) in ("done", "error")

    WebDriverWait(driver, TRANSCRIPTION_TIMEOUT).until(finished)
    driver.save_screenshot(str(screenshot))
    return {
        "state": driver.find_element(By.ID, "status").get_attribute("data-state"),
        "status": driver.find_element(By.ID, "status").text,
        "transcript": driver.find_element(By.ID, "transcript").text,
        "timing": driver.find_element(By.ID, "timing").text,
        "audio": driver.find_element(By.ID, "audio-state").text,
    }


def fill(driver: webdriver.Chrome, element_id: str, value: str) -> None:
    element = driver.find_element(By.ID, element_id)
    element.clear()
    element.send_keys(value)


def main() -> None:
    base_url, key, mic_wav, mic_secs, file, out = sys.argv[1:7]
    out_dir = Path(out)
    out_dir.mkdir(parents=True, exist_ok=True)
    driver = browser(Path(mic_wav).resolve())
    result = {}
    try:
        driver.get(base_url + "/")
        fill(driver, "key", key)

        driver.find_element(By.ID, "record").click()
        WebDriverWait(driver, 30).until(
            lambda d: d.find_element(By.ID, "recording").get_attribute("data-state") == "recording"
        )
        time.sleep(float(mic_secs))
        driver.find_element(By.ID, "stop").click()
        WebDriverWait(driver, 30).until(
            lambda d: d.find_element(By.ID, "audio-state").get_attribute("data-ready") == "true"
        )
        driver.find_element(By.ID, "send").click()
        result["record"] = result_of(driver, 1, out_dir / "record.png")

        driver.find_element(By.ID, "file").send_keys(str(Path(file).resolve()))
        fill(driver, "dictionary", "Americans, country")
        fill(driver, "sounds_like", '{"Americans": ["a merry cans"]}')
        fill(driver, "languages", "en")
        driver.find_element(By.ID, "send").click()
        result["file"] = result_of(driver, 2, out_dir / "page.png")

        fill(driver, "key", "sk-wrong")
        driver.find_element(By.ID, "send").click()
        result["wrong_key"] = result_of(driver, 3, out_dir / "wrong-key.png")
        result["console"] = [
            entry.get("message", "") for entry in driver.get_log("browser")
        ]
    finally:
        driver.quit()
    print(json.dumps(result))


if __name__ == "__main__":
    main()
