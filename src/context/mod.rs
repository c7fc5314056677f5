//! Request context: validated `messages`, `languages` and `dictionary`.
