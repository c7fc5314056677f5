//! Audio ingestion: probe the container from the bytes, decode, downmix, resample to 16 kHz mono f32.
