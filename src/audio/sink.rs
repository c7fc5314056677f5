//! Where decoded buffers go: downmix, sanitise, resample to 16 kHz, and the running check
//! of the decoded duration against the limit.

use crate::error::Error;

use super::resample::{StreamResampler, sanitize};
use super::{AudioFormat, Pcm16k, TARGET_SAMPLE_RATE};

/// Receives decoded buffers: downmix, sanitise, resample, enforce the duration limit.
pub(crate) struct Sink {
    max_secs: f64,
    out: Vec<f32>,
    resampler: Option<StreamResampler>,
    /// Seconds of audio in resamplers already finished (earlier links of a chained Ogg).
    finished_secs: f64,
    frames: u64,
    first_spec: Option<(u32, u16)>,
    interleaved: Vec<f32>,
    mono: Vec<f32>,
}

impl Sink {
    /// A sink for at most `max_secs` of audio. `described_secs` is what the packets
    /// describe ([`super::scan`]): the output is reserved for it up front (within the
    /// limit), so an hour is not copied from one doubling of the vector to the next.
    /// Reserving does not touch the memory: a file that describes an hour and decodes to
    /// nothing costs no page of it.
    pub(crate) fn new(max_secs: f64, described_secs: f64) -> Self {
        let reserve_secs = described_secs.clamp(0.0, max_secs.max(0.0)) + 1.0;
        let reserve = (reserve_secs * f64::from(TARGET_SAMPLE_RATE)) as usize;
        let mut out = Vec::new();
        // A limit set very high may ask for more than the allocator gives: grow instead.
        let _ = out.try_reserve_exact(reserve);
        Sink {
            max_secs,
            out,
            resampler: None,
            finished_secs: 0.0,
            frames: 0,
            first_spec: None,
            interleaved: Vec::new(),
            mono: Vec::new(),
        }
    }

    /// Decoded frames so far (at the source rates).
    pub(crate) fn frames(&self) -> u64 {
        self.frames
    }

    pub(crate) fn push(
        &mut self,
        buffer: &symphonia::core::audio::GenericAudioBufferRef<'_>,
    ) -> Result<(), Error> {
        let n_frames = buffer.frames();
        if n_frames == 0 {
            return Ok(());
        }
        let rate = buffer.spec().rate();
        let channels = buffer.spec().channels().count().max(1);
        self.first_spec
            .get_or_insert((rate, u16::try_from(channels).unwrap_or(u16::MAX)));

        buffer.copy_to_vec_interleaved::<f32>(&mut self.interleaved);
        if channels == 1 {
            // Mono: sanitised in place, one pass fewer over every sample.
            self.interleaved.iter_mut().for_each(|s| *s = sanitize(*s));
        } else {
            let scale = 1.0 / channels as f32;
            self.mono.clear();
            self.mono.extend(
                self.interleaved
                    .chunks_exact(channels)
                    .map(|frame| frame.iter().copied().map(sanitize).sum::<f32>() * scale),
            );
        }
        let mono = if channels == 1 {
            &self.interleaved
        } else {
            &self.mono
        };

        // A new rate (next link of a chained Ogg, a rate change mid-stream): finish the
        // current resampler and start another.
        let resampler = match self.resampler.take() {
            Some(r) if r.rate() == rate => r,
            previous => {
                if let Some(previous) = previous {
                    self.finished_secs += previous.frames_in() as f64 / f64::from(previous.rate());
                    previous.finish(&mut self.out)?;
                }
                StreamResampler::new(rate)?
            }
        };
        let resampler = self.resampler.insert(resampler);
        resampler.push(mono, &mut self.out)?;
        self.frames += mono.len() as u64;

        let decoded_secs =
            self.finished_secs + resampler.frames_in() as f64 / f64::from(resampler.rate());
        if decoded_secs > self.max_secs {
            return Err(Error::AudioTooLong {
                limit_secs: self.max_secs,
            });
        }
        Ok(())
    }

    pub(crate) fn finish(mut self, format: AudioFormat) -> Result<Pcm16k, Error> {
        if let Some(resampler) = self.resampler.take() {
            resampler.finish(&mut self.out)?;
        }
        let (source_sample_rate, source_channels) = self.first_spec.unwrap_or_default();
        Ok(Pcm16k {
            samples: self.out,
            source_format: format,
            source_sample_rate,
            source_channels,
        })
    }
}
