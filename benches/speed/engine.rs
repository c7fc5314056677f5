//! Benches on the engine directly: what a second decode of a window costs, and what a
//! decoder step costs with each format of the weights in memory.

use std::time::Instant;

use ctxscribe::engine::{
    EngineConfig, EngineRequest, Stop, WhisperEngine, WindowPasses, transcribe_judged,
};
use ctxscribe::{Decoding, Languages, Weights};

use crate::{Clip, Options, median};

/// The text a decoder step bench decodes, token by token (about 60 tokens).
const STEP_TEXT: &str = "And so my fellow Americans, ask not what your country can do for you, \
    ask what you can do for your country. We choose to go to the moon in this decade and do \
    the other things, not because they are easy, but because they are hard.";

fn load_engine(options: &Options, weights: Weights) -> Result<WhisperEngine, String> {
    let model_path = match &options.model {
        Some(path) => path.clone(),
        None => ctxscribe::config::default_model_path().ok_or("no model installed")?,
    };
    WhisperEngine::load(&EngineConfig {
        vad_model_path: ctxscribe::config::default_vad_model_path(&model_path),
        model_path,
        threads: options.threads,
        decoding: Decoding::Greedy,
        weights,
        device: ctxscribe::config::default_device().map_err(|e| e.to_string())?,
    })
    .map_err(|e| e.to_string())
}

/// What a second decode of a window costs against its first pass (encoding, language
/// detection and the plain decode), on the engine directly: the judge of each window
/// decodes it once more, unprompted, on the same encoding.
pub(crate) fn bench_second_decode(options: &Options, clips: &[Clip]) -> Result<(), String> {
    let engine = load_engine(options, ctxscribe::config::default_weights())?;
    let (mut firsts, mut seconds, mut ratios) = (Vec::new(), Vec::new(), Vec::new());
    let passes_before = engine.encoder_passes();
    let mut windows = 0;
    for _ in 0..options.runs {
        for clip in clips {
            let languages = Languages::Auto;
            let request = EngineRequest {
                samples: &clip.samples,
                languages: &languages,
                prompt: "",
                stop: &Stop::NEVER,
                bias: None,
                sentence_case: true,
                term_words: &[],
            };
            let mut second = 0.0;
            let started = Instant::now();
            let mut judge = |window: &mut dyn WindowPasses| {
                let again = Instant::now();
                window.decode_prompted("", None)?;
                second += again.elapsed().as_secs_f64();
                windows += 1;
                Ok(window.plain_text().to_owned())
            };
            engine
                .on_engine_threads(|| transcribe_judged(&mut engine.session(&request)?, &mut judge))
                .map_err(|e| e.to_string())?;
            let first = started.elapsed().as_secs_f64() - second;
            firsts.push(first);
            seconds.push(second);
            ratios.push(second / first.max(1e-9));
        }
    }
    println!(
        "second decode of a window (5 s clips, {} windows): first pass {:.3} s, second decode \
         {:.3} s (medians), ratio {:.2} (target <= 0.5); encoder passes per window {:.2}",
        windows,
        median(&mut firsts),
        median(&mut seconds),
        median(&mut ratios),
        (engine.encoder_passes() - passes_before) as f64 / f64::from(windows.max(1)),
    );
    Ok(())
}

/// A decoder step (one run of one token, on a 5 s clip's encoding) with the decoder's
/// matrices as `Weights::Fastest` holds them (8-bit) against `Weights::Unquantized`,
/// the two engines taking turns; the median of the runs' means.
pub(crate) fn bench_decoder_step(options: &Options, clips: &[Clip]) -> Result<(), String> {
    let Some(clip) = clips.first() else {
        return Ok(());
    };
    let engines = [Weights::Fastest, Weights::Unquantized]
        .map(|weights| load_engine(options, weights).map(|engine| (weights, engine)));
    let mut steps = [Vec::new(), Vec::new()];
    let mut runs = 0;
    for _ in 0..options.runs.max(3) {
        for (engine, steps) in engines.iter().zip(&mut steps) {
            let (_, engine) = engine.as_ref().map_err(String::clone)?;
            let (seconds, tokens) = engine
                .decoder_step_seconds(&clip.samples, STEP_TEXT)
                .map_err(|e| e.to_string())?;
            steps.push(seconds * 1000.0);
            runs = tokens;
        }
    }
    let [fastest, unquantized] = steps.map(|mut steps| median(&mut steps));
    println!(
        "decoder step ({runs} tokens one run each, 5 s clip's encoding): fastest weights \
         {fastest:.2} ms, unquantized {unquantized:.2} ms, ratio {:.2}",
        unquantized / fastest
    );
    Ok(())
}
