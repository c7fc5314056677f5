//! Where decoded buffers go: downmix, sanitise, resample to 16 kHz, and the running check
//! of the decoded duration against the limit.

use crate::error::Error;

use super::resample::{StreamResampler, sanitize};
use super::scan::{max_secs_for_bytes, too_sparse};
use super::{AudioFormat, AudioLimits, Pcm16k, TARGET_SAMPLE_RATE};

/// Receives decoded buffers: downmix, sanitise, resample, enforce the duration limit.
pub(crate) struct Sink {
    limits: AudioLimits,
    /// Input bytes, and the most seconds they may decode to.
    bytes: usize,
    max_secs_for_bytes: f64,
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
    /// A sink for at most `limits.max_duration_secs` of audio, and at most what `bytes` of
    /// input may decode to ([`max_secs_for_bytes`]: the packet scan may not know every
    /// packet's duration). `described_secs` is what the packets describe
    /// ([`super::scan`]): the output is reserved for it up front (within the limit), so an
    /// hour is not copied from one doubling of the vector to the next. Reserving does not
    /// touch the memory: a file that describes an hour and decodes to nothing costs no
    /// page of it.
    pub(crate) fn new(limits: &AudioLimits, bytes: usize, described_secs: f64) -> Self {
        let max_secs = limits.max_duration_secs;
        let reserve_secs = described_secs.clamp(0.0, max_secs.max(0.0)) + 1.0;
        let reserve = (reserve_secs * f64::from(TARGET_SAMPLE_RATE)) as usize;
        let mut out = Vec::new();
        // A limit set very high may ask for more than the allocator gives: grow instead.
        let _ = out.try_reserve_exact(reserve);
        Sink {
            limits: limits.clone(),
            bytes,
            max_secs_for_bytes: max_secs_for_bytes(bytes, limits),
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
        if decoded_secs > self.limits.max_duration_secs {
            return Err(Error::AudioTooLong {
                limit_secs: self.limits.max_duration_secs,
            });
        }
        if decoded_secs > self.max_secs_for_bytes {
            return Err(too_sparse(self.bytes, decoded_secs, &self.limits));
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

#[cfg(test)]
mod tests {
    use symphonia::core::audio::{AsGenericAudioBufferRef, AudioBuffer, AudioSpec, Channels};

    use super::*;

    /// Pushes `buffers` buffers of 0.1 s of 16 kHz mono silence; the first error, if any.
    fn push_silence(sink: &mut Sink, buffers: usize) -> Result<(), Error> {
        let spec = AudioSpec::new(TARGET_SAMPLE_RATE, Channels::Discrete(1));
        let mut buffer = AudioBuffer::<f32>::new(spec, 1600);
        buffer.render_silence(Some(1600));
        for _ in 0..buffers {
            sink.push(&buffer.as_generic_audio_buffer_ref())?;
        }
        Ok(())
    }

    #[test]
    fn decoded_audio_is_bounded_by_the_input_bytes() {
        // 96 bytes at 48 bytes per second: 2 s of audio, whatever the scan described.
        let limits = AudioLimits::default();
        let mut sink = Sink::new(&limits, 96, 0.0);
        push_silence(&mut sink, 20).expect("2 s");
        let err = push_silence(&mut sink, 1).expect_err("2.1 s");
        assert_eq!(err.code(), "audio_decode_failed");
        assert!(err.to_string().contains("in 96 bytes"), "{err}");
        // Without the floor, the duration limit is what stops it.
        let limits = AudioLimits {
            min_bytes_per_sec: 0.0,
            max_duration_secs: 3.0,
            ..AudioLimits::default()
        };
        let mut sink = Sink::new(&limits, 96, 0.0);
        push_silence(&mut sink, 30).expect("3 s");
        let err = push_silence(&mut sink, 1).expect_err("3.1 s");
        assert_eq!(err.code(), "audio_too_long");
        let pcm = Sink::new(&limits, 96, 0.0)
            .finish(AudioFormat::Wav)
            .expect("empty");
        assert!(pcm.samples.is_empty());
    }

    #[test]
    fn too_long_is_reported_before_too_sparse() {
        // 5 bytes may hold 0.104 s; the limit is 0.15 s. The second buffer passes both.
        let limits = AudioLimits {
            max_duration_secs: 0.15,
            ..AudioLimits::default()
        };
        let mut sink = Sink::new(&limits, 5, 0.0);
        push_silence(&mut sink, 1).expect("0.1 s");
        let err = push_silence(&mut sink, 1).expect_err("0.2 s");
        assert_eq!(err.code(), "audio_too_long");
    }
}
