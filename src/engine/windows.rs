//! Cutting a whole file into Whisper-sized windows along speech boundaries.
//!
//! Whisper sees at most 30 s at a time. Instead of blind 30 s cuts (which split words),
//! speech regions (from the VAD, or the whole signal when there is none) are merged into
//! blocks, and consecutive blocks are packed into windows of at most
//! [`MAX_WINDOW_SECS`]. Leading and trailing silence, and the middle of long pauses, never
//! reach the engine: that is faster and removes the silence Whisper hallucinates on.

use std::ops::Range;

use crate::audio::TARGET_SAMPLE_RATE;

const RATE: usize = TARGET_SAMPLE_RATE as usize;

/// Longest window handed to Whisper, in seconds (its context is 30 s).
pub const MAX_WINDOW_SECS: f64 = 28.0;
/// Audio kept on each side of a detected speech region, in seconds.
pub const SPEECH_PAD_SECS: f64 = 0.25;
/// Pauses shorter than this stay inside a block as they are, in seconds.
pub const MERGE_GAP_SECS: f64 = 1.0;
/// Silence inserted between two blocks packed into one window, in seconds.
pub const JOIN_SILENCE_SECS: f64 = 0.3;

/// One window: the sample ranges of the original signal it is made of, in order.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Window {
    /// Pieces of the original signal; silence of [`JOIN_SILENCE_SECS`] goes between them.
    pub pieces: Vec<Range<usize>>,
}

impl Window {
    /// The window's samples: its pieces joined by short silences.
    #[must_use]
    pub fn render(&self, signal: &[f32]) -> Vec<f32> {
        let join = secs_to_samples(JOIN_SILENCE_SECS);
        let total: usize =
            self.pieces.iter().map(|p| p.len()).sum::<usize>() + join * self.pieces.len();
        let mut out = Vec::with_capacity(total);
        for (index, piece) in self.pieces.iter().enumerate() {
            if index > 0 {
                out.resize(out.len() + join, 0.0);
            }
            if let Some(samples) = signal.get(piece.clone()) {
                out.extend_from_slice(samples);
            }
        }
        out
    }

    /// The sample of the original signal that `offset` (a sample of
    /// [`Window::render`]'s output) comes from; an offset in the silence joining two
    /// pieces, or past the end, maps to where the piece before it ends.
    #[must_use]
    pub fn source_sample(&self, offset: usize) -> usize {
        let join = secs_to_samples(JOIN_SILENCE_SECS);
        let mut position = 0usize;
        let mut last_end = self.pieces.first().map_or(0, |p| p.start);
        for (index, piece) in self.pieces.iter().enumerate() {
            if index > 0 {
                if offset < position + join {
                    return last_end;
                }
                position += join;
            }
            if offset < position + piece.len() {
                return piece.start + (offset - position);
            }
            position += piece.len();
            last_end = piece.end;
        }
        last_end
    }

    /// The window from sample `offset` of [`Window::render`]'s output on: the piece
    /// `offset` falls in, cut there, and the pieces after it (an offset in the silence
    /// joining two pieces starts at the next piece).
    #[must_use]
    pub fn rest_from(&self, offset: usize) -> Window {
        let join = secs_to_samples(JOIN_SILENCE_SECS);
        let mut position = 0usize;
        let mut pieces = Vec::new();
        for (index, piece) in self.pieces.iter().enumerate() {
            if index > 0 {
                position += join;
            }
            if position + piece.len() > offset {
                let skip = offset.saturating_sub(position);
                pieces.push(piece.start + skip..piece.end);
            }
            position += piece.len();
        }
        Window { pieces }
    }

    /// This window followed by `next` (joined by silence), when that fits in
    /// [`MAX_WINDOW_SECS`].
    #[must_use]
    pub fn joined_with(&self, next: &Window) -> Option<Window> {
        let join = secs_to_samples(JOIN_SILENCE_SECS);
        let len = self.len_samples() + join + next.len_samples();
        (len <= secs_to_samples(MAX_WINDOW_SECS)).then(|| Window {
            pieces: self.pieces.iter().chain(&next.pieces).cloned().collect(),
        })
    }

    /// Length of [`Window::render`]'s output in samples.
    #[must_use]
    pub fn len_samples(&self) -> usize {
        let join = secs_to_samples(JOIN_SILENCE_SECS);
        self.pieces.iter().map(|p| p.len()).sum::<usize>()
            + join * self.pieces.len().saturating_sub(1)
    }
}

/// Plans the windows for `signal` given its speech regions (sample ranges, any order,
/// possibly overlapping). No regions means no speech: no windows.
#[must_use]
pub fn plan_windows(signal: &[f32], regions: &[Range<usize>]) -> Vec<Window> {
    let blocks = merge_regions(signal.len(), regions);
    let max_len = secs_to_samples(MAX_WINDOW_SECS);
    let join = secs_to_samples(JOIN_SILENCE_SECS);

    let mut windows = Vec::new();
    let mut current: Vec<Range<usize>> = Vec::new();
    let mut current_len = 0usize;
    for block in blocks {
        for piece in split_long_block(signal, block, max_len) {
            let added = piece.len() + if current.is_empty() { 0 } else { join };
            if !current.is_empty() && current_len + added > max_len {
                windows.push(Window {
                    pieces: std::mem::take(&mut current),
                });
                current_len = 0;
            }
            current_len += piece.len() + if current.is_empty() { 0 } else { join };
            current.push(piece);
        }
    }
    if !current.is_empty() {
        windows.push(Window { pieces: current });
    }
    windows
}

/// Pads regions, clamps them to the signal and merges those closer than
/// [`MERGE_GAP_SECS`].
fn merge_regions(len: usize, regions: &[Range<usize>]) -> Vec<Range<usize>> {
    let pad = secs_to_samples(SPEECH_PAD_SECS);
    let gap = secs_to_samples(MERGE_GAP_SECS);
    let mut padded: Vec<Range<usize>> = regions
        .iter()
        .filter(|r| r.start < r.end && r.start < len)
        .map(|r| r.start.saturating_sub(pad)..(r.end.saturating_add(pad)).min(len))
        .collect();
    padded.sort_by_key(|r| r.start);
    let mut merged: Vec<Range<usize>> = Vec::with_capacity(padded.len());
    for region in padded {
        match merged.last_mut() {
            Some(last) if region.start <= last.end.saturating_add(gap) => {
                last.end = last.end.max(region.end);
            }
            _ => merged.push(region),
        }
    }
    merged
}

/// Splits a block longer than `max_len` at the quietest 20 ms frame of the last quarter of
/// each piece, so that continuous speech is cut in a pause when there is one.
fn split_long_block(signal: &[f32], block: Range<usize>, max_len: usize) -> Vec<Range<usize>> {
    let mut pieces = Vec::new();
    let mut start = block.start;
    while block.end - start > max_len {
        let search = (start + max_len * 3 / 4)..(start + max_len);
        let cut = quietest_frame(signal, search).unwrap_or(start + max_len);
        pieces.push(start..cut);
        start = cut;
    }
    pieces.push(start..block.end);
    pieces
}

fn quietest_frame(signal: &[f32], range: Range<usize>) -> Option<usize> {
    let frame = RATE / 50;
    let mut best: Option<(f32, usize)> = None;
    let mut position = range.start;
    while position + frame <= range.end {
        let energy: f32 = signal
            .get(position..position + frame)?
            .iter()
            .map(|s| s * s)
            .sum();
        if best.is_none_or(|(lowest, _)| energy < lowest) {
            best = Some((energy, position + frame / 2));
        }
        position += frame;
    }
    best.map(|(_, at)| at)
}

/// Seconds to a sample count at 16 kHz.
#[must_use]
pub fn secs_to_samples(secs: f64) -> usize {
    // Truncation is intended: the values are small positive constants or durations.
    #[allow(clippy::cast_possible_truncation, clippy::cast_sign_loss)]
    let samples = (secs * RATE as f64).round().max(0.0) as usize;
    samples
}

/// Peak absolute amplitude below which a signal counts as digital silence (-60 dBFS).
pub const SILENCE_PEAK: f32 = 1e-3;

/// True when nothing in `signal` rises above [`SILENCE_PEAK`].
#[must_use]
pub fn is_digital_silence(signal: &[f32]) -> bool {
    signal.iter().all(|s| s.abs() < SILENCE_PEAK)
}

#[cfg(test)]
#[allow(clippy::single_range_in_vec_init)]
mod tests {
    use super::*;

    fn s(secs: f64) -> usize {
        secs_to_samples(secs)
    }

    #[test]
    fn no_regions_no_windows() {
        let signal = vec![0.0; s(10.0)];
        assert!(plan_windows(&signal, &[]).is_empty());
    }

    #[test]
    fn single_region_is_padded_and_clamped() {
        let signal = vec![0.1; s(10.0)];
        let windows = plan_windows(&signal, &[s(0.1)..s(9.9)]);
        assert_eq!(windows.len(), 1);
        assert_eq!(windows[0].pieces, vec![0..s(10.0)]);
        let windows = plan_windows(&signal, &[s(2.0)..s(3.0)]);
        assert_eq!(windows[0].pieces, vec![s(1.75)..s(3.25)]);
    }

    #[test]
    fn close_regions_merge_and_far_regions_join_with_short_silence() {
        let signal = vec![0.1; s(20.0)];
        let windows = plan_windows(&signal, &[s(1.0)..s(2.0), s(2.5)..s(3.0), s(10.0)..s(11.0)]);
        assert_eq!(windows.len(), 1);
        assert_eq!(windows[0].pieces, vec![s(0.75)..s(3.25), s(9.75)..s(11.25)]);
        let rendered = windows[0].render(&signal);
        assert_eq!(rendered.len(), windows[0].len_samples());
        assert_eq!(rendered.len(), s(2.5) + s(0.3) + s(1.5));
    }

    #[test]
    fn long_speech_is_split_into_windows_below_the_limit() {
        let mut signal: Vec<f32> = (0..s(100.0)).map(|i| ((i % 50) as f32) / 100.0).collect();
        // A pause at 25 s should be where the first cut lands.
        for sample in &mut signal[s(25.0)..s(25.1)] {
            *sample = 0.0;
        }
        let windows = plan_windows(&signal, &[0..s(100.0)]);
        assert!(windows.len() >= 4);
        let max = s(MAX_WINDOW_SECS);
        for window in &windows {
            assert!(window.len_samples() <= max, "{}", window.len_samples());
        }
        let first_cut = windows[0].pieces[0].end;
        assert!((s(25.0)..s(25.1)).contains(&first_cut), "{first_cut}");
        // Nothing of the speech is lost: pieces tile the region.
        let covered: usize = windows
            .iter()
            .flat_map(|w| w.pieces.iter())
            .map(|p| p.len())
            .sum();
        assert_eq!(covered, s(100.0));
    }

    #[test]
    fn a_rest_starts_where_it_is_cut_and_joins_the_next_window_when_it_fits() {
        let window = Window {
            pieces: vec![s(1.0)..s(3.0), s(10.0)..s(12.0)],
        };
        // 2 s of the first piece, 0.3 s of silence, the second piece.
        assert_eq!(
            window.rest_from(s(1.5)).pieces,
            vec![s(2.5)..s(3.0), s(10.0)..s(12.0)]
        );
        assert_eq!(window.rest_from(s(2.1)).pieces, vec![s(10.0)..s(12.0)]);
        assert_eq!(
            window.rest_from(s(2.3) + s(0.5)).pieces,
            vec![s(10.5)..s(12.0)]
        );
        assert!(window.rest_from(s(10.0)).pieces.is_empty());
        let rest = window.rest_from(s(2.3));
        let next = Window {
            pieces: vec![s(20.0)..s(40.0)],
        };
        let joined = rest.joined_with(&next).expect("22.3 s fits");
        assert_eq!(joined.pieces, vec![s(10.0)..s(12.0), s(20.0)..s(40.0)]);
        assert_eq!(joined.len_samples(), s(2.0) + s(0.3) + s(20.0));
        let long = Window {
            pieces: vec![s(20.0)..s(46.0)],
        };
        assert_eq!(rest.joined_with(&long), None);
    }

    #[test]
    fn silence_detection() {
        assert!(is_digital_silence(&[0.0; 100]));
        assert!(is_digital_silence(&[]));
        assert!(!is_digital_silence(&[0.0, 0.2, 0.0]));
    }
}
