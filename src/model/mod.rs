//! Whisper models: locating them and converting CTranslate2 weights to whisper.cpp ggml.
