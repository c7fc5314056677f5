//! numpy arrays of PCM samples -> mono `f32` samples for [`ctxscribe::Audio::Pcm`].
//!
//! float32 (in [-1, 1]), float64 and int16 (full scale 32768), shaped `(frames,)` or
//! `(frames, channels)`; channels are averaged. One pass reads the array in whatever
//! layout it has (a float32 mono array in C order is one `memcpy`) into the owned buffer
//! the transcription runs on, detached from the interpreter. numpy itself is only looked
//! at when the process has imported it: `ctxscribe` does not depend on it.

use numpy::ndarray::ArrayViewD;
use numpy::{
    PyArrayDyn, PyArrayMethods, PyReadonlyArrayDyn, PyUntypedArray, PyUntypedArrayMethods,
};
use pyo3::intern;
use pyo3::prelude::*;

use crate::errors::invalid;

/// The most channels a `(frames, channels)` array may have: more is likely a
/// `(channels, frames)` array given the wrong way round.
pub(crate) const MAX_CHANNELS: usize = 64;

/// True when `audio` is a numpy array. numpy is not imported for the check: an object
/// can only be an array when numpy is loaded already.
pub(crate) fn is_array(audio: &Bound<'_, PyAny>) -> PyResult<bool> {
    let py = audio.py();
    let loaded = py
        .import(intern!(py, "sys"))?
        .getattr(intern!(py, "modules"))?
        .contains(intern!(py, "numpy"))?;
    Ok(loaded && audio.is_instance_of::<PyUntypedArray>())
}

/// The mono samples of the numpy array `audio`, or an `InvalidRequestError` about
/// `file` naming what is wrong (dtype, shape, a non-finite sample).
pub(crate) fn mono_samples(audio: &Bound<'_, PyAny>) -> PyResult<Vec<f32>> {
    let py = audio.py();
    let array = audio.cast::<PyUntypedArray>()?;
    let shape = array.shape().to_vec();
    let shape_text = || {
        format!(
            "({})",
            shape
                .iter()
                .map(usize::to_string)
                .collect::<Vec<_>>()
                .join(", ")
        )
    };
    match shape.as_slice() {
        [_] => {}
        [_, channels] if (1..=MAX_CHANNELS).contains(channels) => {}
        [_, _] => {
            return Err(invalid(
                py,
                "file",
                format!(
                    "audio arrays are (frames, channels) with 1 to {MAX_CHANNELS} channels, got \
                     shape {}; pass a (channels, frames) array transposed (array.T)",
                    shape_text()
                ),
            ));
        }
        _ => {
            return Err(invalid(
                py,
                "file",
                format!(
                    "audio arrays must be 1-D (frames,) or 2-D (frames, channels), got shape {}",
                    shape_text()
                ),
            ));
        }
    }
    let samples = if let Ok(array) = audio.cast::<PyArrayDyn<f32>>() {
        mono(&readonly(py, array)?.as_array(), |s| s)
    } else if let Ok(array) = audio.cast::<PyArrayDyn<f64>>() {
        // Rounding to f32: a value beyond f32's range becomes infinite (refused below).
        #[allow(clippy::cast_possible_truncation)]
        mono(&readonly(py, array)?.as_array(), |s| s as f32)
    } else if let Ok(array) = audio.cast::<PyArrayDyn<i16>>() {
        mono(&readonly(py, array)?.as_array(), |s| f32::from(s) / 32768.0)
    } else {
        return Err(invalid(
            py,
            "file",
            format!(
                "audio arrays must have dtype float32, float64 or int16 (native byte order), \
                 got {}",
                array.dtype()
            ),
        ));
    };
    if let Some(frame) = samples.iter().position(|s| !s.is_finite()) {
        return Err(invalid(
            py,
            "file",
            format!("the audio array has a non-finite sample (NaN or infinity) at frame {frame}"),
        ));
    }
    Ok(samples)
}

fn readonly<'py, T: numpy::Element>(
    py: Python<'py>,
    array: &Bound<'py, PyArrayDyn<T>>,
) -> PyResult<PyReadonlyArrayDyn<'py, T>> {
    array
        .try_readonly()
        .map_err(|e| invalid(py, "file", format!("the audio array cannot be read: {e}")))
}

/// The frames of `view` (`(frames,)` or `(frames, channels)`), channels averaged.
fn mono<T: Copy>(view: &ArrayViewD<'_, T>, to_f32: impl Fn(T) -> f32) -> Vec<f32> {
    if view.ndim() == 1 {
        return match view.as_slice() {
            Some(slice) => slice.iter().map(|&s| to_f32(s)).collect(),
            None => view.iter().map(|&s| to_f32(s)).collect(),
        };
    }
    let channels = view.shape().get(1).copied().unwrap_or(1).max(1);
    #[allow(clippy::cast_precision_loss)]
    let scale = 1.0 / channels as f32;
    view.outer_iter()
        .map(|frame| frame.iter().map(|&s| to_f32(s)).sum::<f32>() * scale)
        .collect()
}
