//! Opening a container with symphonia: the codec registry (symphonia's codecs and
//! libopus), the reader of each format, the audio track to decode, and the errors and
//! deadline both passes over a file share (the scan, `scan.rs`, and the decode,
//! `decode.rs`).

use std::io::Cursor;
use std::sync::LazyLock;
use std::time::Instant;

use symphonia::core::codecs::CodecParameters;
use symphonia::core::codecs::audio::well_known::{
    CODEC_ID_AAC, CODEC_ID_AC3, CODEC_ID_ALAC, CODEC_ID_EAC3, CODEC_ID_FLAC, CODEC_ID_MP1,
    CODEC_ID_MP2, CODEC_ID_MP3, CODEC_ID_OPUS, CODEC_ID_PCM_F32LE, CODEC_ID_PCM_F64LE,
    CODEC_ID_PCM_S16BE, CODEC_ID_PCM_S16LE, CODEC_ID_PCM_S24BE, CODEC_ID_PCM_S24LE,
    CODEC_ID_PCM_S32BE, CODEC_ID_PCM_S32LE, CODEC_ID_SPEEX, CODEC_ID_VORBIS, CODEC_ID_WMA,
};
use symphonia::core::codecs::audio::{AudioCodecId, AudioCodecParameters};
use symphonia::core::codecs::registry::CodecRegistry;
use symphonia::core::errors::Error as SymphoniaError;
use symphonia::core::formats::{FormatOptions, FormatReader, Track};
use symphonia::core::io::{MediaSourceStream, MediaSourceStreamOptions, ReadOnlySource};
use symphonia::default::formats::{IsoMp4Reader, MkvReader, MpaReader, OggReader, WavReader};
use symphonia_adapter_libopus::OpusDecoder;

use super::probe::Probed;
use super::{AudioFormat, AudioLimits};
use crate::error::Error;

/// symphonia's enabled codecs plus libopus.
pub(super) static CODECS: LazyLock<CodecRegistry> = LazyLock::new(|| {
    let mut registry = CodecRegistry::new();
    symphonia::default::register_enabled_codecs(&mut registry);
    registry.register_audio_decoder::<OpusDecoder>();
    registry
});

pub(crate) fn symphonia_error(context: impl std::fmt::Display, e: SymphoniaError) -> Error {
    Error::AudioDecode {
        message: format!("{context}: {e}"),
        source: Some(Box::new(e)),
    }
}

/// Fails once `deadline` has passed.
pub(crate) fn check_deadline(deadline: Option<Instant>, limits: &AudioLimits) -> Result<(), Error> {
    if deadline.is_some_and(|d| Instant::now() > d) {
        return Err(Error::decode(format!(
            "decoding took too long (limit {:.1} s)",
            limits.decode_timeout.as_secs_f64()
        )));
    }
    Ok(())
}

/// Opens the symphonia reader of `format` on `data`.
pub(crate) fn open_reader<'a>(
    format: AudioFormat,
    data: &'a [u8],
) -> Result<Box<dyn FormatReader + 'a>, Error> {
    fn boxed<'a, R: FormatReader + 'a>(r: R) -> Box<dyn FormatReader + 'a> {
        Box::new(r)
    }
    let seekable = || MediaSourceStream::new(Box::new(Cursor::new(data)), Default::default());
    let opts = FormatOptions::default();
    let opened = match format {
        AudioFormat::Wav => WavReader::try_new(seekable(), opts).map(boxed),
        AudioFormat::Mp3 => MpaReader::try_new(seekable(), opts).map(boxed),
        AudioFormat::M4a => IsoMp4Reader::try_new(seekable(), opts).map(boxed),
        AudioFormat::Ogg => OggReader::try_new(seekable(), opts).map(boxed),
        AudioFormat::Webm => match MkvReader::try_new(seekable(), opts.clone()) {
            Ok(reader) => Ok(boxed(reader)),
            // A truncated seekable WebM points (SeekHead, Cues) past its end; read forward
            // only, as a live stream is read (pitfall 4).
            Err(first) => {
                let forward = MediaSourceStream::new(
                    Box::new(ReadOnlySource::new(Cursor::new(data))),
                    MediaSourceStreamOptions::default(),
                );
                MkvReader::try_new(forward, opts)
                    .map(boxed)
                    .map_err(|_| first)
            }
        },
    };
    opened.map_err(|e| {
        let context = match &e {
            SymphoniaError::IoError(io) if io.kind() == std::io::ErrorKind::UnexpectedEof => {
                format!("the {format} file is truncated before any audio")
            }
            _ => format!("not a readable {format} file"),
        };
        symphonia_error(context, e)
    })
}

/// Whether `track` carries Opus.
pub(crate) fn codec_is_opus(track: &Track) -> bool {
    audio_params(track).is_some_and(|p| p.codec == CODEC_ID_OPUS)
}

pub(super) fn audio_params(track: &Track) -> Option<&AudioCodecParameters> {
    match &track.codec_params {
        Some(CodecParameters::Audio(params)) => Some(params),
        _ => None,
    }
}

/// Codecs a Matroska (not WebM) file may carry to be accepted as the webm family: the WebM
/// codecs, and PCM as Chrome's MediaRecorder writes it.
fn is_webm_codec(codec: AudioCodecId) -> bool {
    [
        CODEC_ID_OPUS,
        CODEC_ID_VORBIS,
        CODEC_ID_PCM_F32LE,
        CODEC_ID_PCM_F64LE,
        CODEC_ID_PCM_S16LE,
        CODEC_ID_PCM_S24LE,
        CODEC_ID_PCM_S32LE,
        CODEC_ID_PCM_S16BE,
        CODEC_ID_PCM_S24BE,
        CODEC_ID_PCM_S32BE,
    ]
    .contains(&codec)
}

pub(super) fn codec_name(codec: AudioCodecId) -> String {
    const NAMES: &[(AudioCodecId, &str)] = &[
        (CODEC_ID_AAC, "aac"),
        (CODEC_ID_AC3, "ac3"),
        (CODEC_ID_EAC3, "eac3"),
        (CODEC_ID_ALAC, "alac"),
        (CODEC_ID_FLAC, "flac"),
        (CODEC_ID_MP1, "mp1"),
        (CODEC_ID_MP2, "mp2"),
        (CODEC_ID_MP3, "mp3"),
        (CODEC_ID_OPUS, "opus"),
        (CODEC_ID_SPEEX, "speex"),
        (CODEC_ID_VORBIS, "vorbis"),
        (CODEC_ID_WMA, "wma"),
    ];
    NAMES
        .iter()
        .find(|(id, _)| *id == codec)
        .map(|(_, name)| (*name).to_owned())
        .or_else(|| {
            CODECS
                .get_audio_decoder(codec)
                .map(|d| d.codec.info.short_name.to_owned())
        })
        .unwrap_or_else(|| format!("codec {codec}"))
}

/// The first audio track we can decode, and its codec parameters.
pub(crate) fn select_track<'r>(
    reader: &'r dyn FormatReader,
    probed: &Probed,
) -> Result<(&'r Track, &'r AudioCodecParameters), Error> {
    let audio: Vec<(&Track, &AudioCodecParameters)> = reader
        .tracks()
        .iter()
        .filter_map(|t| audio_params(t).map(|p| (t, p)))
        .collect();
    let Some(&(_, first_params)) = audio.first() else {
        return Err(Error::decode(format!(
            "the {} file has no audio track",
            probed.format
        )));
    };
    let allowed = |codec| !probed.matroska || is_webm_codec(codec);
    let chosen = audio
        .iter()
        .find(|(_, p)| allowed(p.codec) && CODECS.get_audio_decoder(p.codec).is_some());
    let Some(&chosen) = chosen else {
        let name = codec_name(first_params.codec);
        return Err(if probed.matroska && !is_webm_codec(first_params.codec) {
            Error::UnsupportedAudioType {
                detected: format!("matroska ({name})"),
            }
        } else {
            Error::decode(format!(
                "the {} file's audio codec ({name}) is not supported",
                probed.format
            ))
        });
    };
    Ok(chosen)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn registry_has_opus_and_the_symphonia_codecs() {
        for codec in [
            CODEC_ID_OPUS,
            CODEC_ID_VORBIS,
            CODEC_ID_AAC,
            CODEC_ID_MP3,
            CODEC_ID_PCM_S16LE,
        ] {
            assert!(
                CODECS.get_audio_decoder(codec).is_some(),
                "{}",
                codec_name(codec)
            );
        }
        assert!(CODECS.get_audio_decoder(CODEC_ID_FLAC).is_none());
    }
}
