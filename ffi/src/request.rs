//! `ctxscribe_request`: the context of a transcription (messages, languages, dictionary
//! and how its terms sound).
//!
//! Every item is validated by the library's own rules when it is added, against the
//! request as it would be with the item added, so an error names the item by its
//! position (`languages[2]`, `dictionary[5]`, `messages[1]`) and the request is left
//! unchanged. The same rules run again when the request is used.

use std::ffi::{CStr, c_char};

use ctxscribe::context::{
    Messages, SoundsLike, parse_dictionary, parse_languages, parse_messages, parse_sounds_like,
    validate_messages,
};
use ctxscribe::{Dictionary, Languages, Message, Role};

use crate::error::{Failure, ctxscribe_error, ctxscribe_status, guard_mut};
use crate::ptr;

/// Who wrote a context message: the values of the `role` argument of
/// `ctxscribe_request_add_message()`.
#[repr(u32)]
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ctxscribe_role {
    /// Instructions or background for the transcription (`"system"`).
    System = 0,
    /// Text from the user, such as earlier turns of the conversation (`"user"`).
    User = 1,
}

/// The context of one transcription: chat-style messages, the allowed languages and
/// dictionary terms. An empty request means no context and automatic language
/// detection.
///
/// Created by `ctxscribe_request_new()`, freed by `ctxscribe_request_free()`. A request
/// may be reused for any number of transcriptions, also concurrently from several
/// threads, as long as no thread changes it meanwhile (adding to it is not
/// synchronised).
#[derive(Debug, Clone, Default)]
pub struct ctxscribe_request {
    /// Checked as they are added.
    messages: Messages,
    /// The language codes as added; empty means automatic detection.
    languages: Vec<String>,
    /// The dictionary terms as added (untrimmed, so positions match what was sent).
    terms: Vec<String>,
    /// Spoken forms per dictionary term, checked as they are added.
    sounds_like: SoundsLike,
}

/// The request's parts as the library takes them.
pub(crate) struct Context {
    pub(crate) messages: Messages,
    pub(crate) languages: Languages,
    pub(crate) dictionary: Dictionary,
}

impl ctxscribe_request {
    /// Validated copies of the request's parts.
    pub(crate) fn context(&self) -> Result<Context, Failure> {
        Ok(Context {
            messages: self.messages.clone(),
            languages: languages_from(&self.languages)?,
            dictionary: dictionary_with(&self.terms, &self.sounds_like)?,
        })
    }

    /// Adds one spoken form of `term`, if the request with it is valid.
    fn add_sounds_like(&mut self, term: &CStr, form: &CStr) -> Result<(), Failure> {
        let term = utf8(term, "sounds_like", "the sounds_like term")?.trim();
        let form = utf8(form, "sounds_like", &format!("sounds_like[{term:?}]"))?;
        // A term given again gets the form added to its others.
        let added = std::iter::once((term.to_owned(), vec![form.to_owned()]));
        let sounds_like =
            SoundsLike::from_pairs(self.sounds_like.entries().iter().cloned().chain(added))?;
        dictionary_with(&self.terms, &sounds_like)?;
        self.sounds_like = sounds_like;
        Ok(())
    }

    fn add_message(&mut self, role: u32, content: &CStr) -> Result<(), Failure> {
        let index = self.messages.len();
        let role = match role {
            r if r == ctxscribe_role::System as u32 => Role::System,
            r if r == ctxscribe_role::User as u32 => Role::User,
            other => {
                return Err(Failure::invalid(
                    "messages",
                    format!(
                        "messages[{index}].role must be CTXSCRIBE_ROLE_SYSTEM (0) or \
                         CTXSCRIBE_ROLE_USER (1), got {other}"
                    ),
                ));
            }
        };
        let content = utf8(content, "messages", &format!("messages[{index}].content"))?;
        let mut messages = self.messages.to_vec();
        messages.push(Message::new(role, content));
        self.messages = validate_messages(messages)?;
        Ok(())
    }
}

/// Appends `item` to `list`, the items of the request field `field`, if `check` accepts
/// the list with it; an error names the item by its position (`languages[2]`).
fn push_checked<T, E>(
    list: &mut Vec<String>,
    field: &'static str,
    item: &CStr,
    check: impl FnOnce(&[String]) -> Result<T, E>,
) -> Result<(), Failure>
where
    Failure: From<E>,
{
    let item = utf8(item, field, &format!("{field}[{}]", list.len()))?;
    let mut checked = list.clone();
    checked.push(item.to_owned());
    check(&checked)?;
    *list = checked;
    Ok(())
}

/// The dictionary of `terms` with the spoken forms of `sounds_like`, by the library's
/// rules (every key a term).
fn dictionary_with(terms: &[String], sounds_like: &SoundsLike) -> Result<Dictionary, Failure> {
    Ok(Dictionary::from_terms(terms)?.with_sounds_like(sounds_like.clone())?)
}

/// No codes means automatic detection; otherwise the library's set rules.
fn languages_from(codes: &[String]) -> Result<Languages, Failure> {
    if codes.is_empty() {
        Ok(Languages::Auto)
    } else {
        Ok(Languages::from_codes(codes)?)
    }
}

/// The codes that give back `languages` through [`languages_from`].
fn codes_of(languages: &Languages) -> Vec<String> {
    match languages {
        Languages::Auto => Vec::new(),
        Languages::One(language) => vec![language.code().to_owned()],
        Languages::AnyOf(set) => set.iter().map(|l| l.code().to_owned()).collect(),
    }
}

/// [`guard_mut`] on `request` for a call with the string argument `text`, which the
/// caller passed as `argument`: both are checked for NULL, `request` first.
///
/// # Safety
///
/// `request` is NULL or a live request nobody else uses during the call; `text` is NULL
/// or a NUL-terminated string; `err_out` is NULL or valid for writing one pointer.
unsafe fn with_text(
    err_out: *mut *mut ctxscribe_error,
    request: *mut ctxscribe_request,
    text: *const c_char,
    argument: &'static str,
    body: impl FnOnce(&mut ctxscribe_request, &CStr) -> Result<(), Failure>,
) -> ctxscribe_status {
    let body = |request: &mut ctxscribe_request| {
        // SAFETY: NULL or a NUL-terminated string, by this function's contract.
        body(request, unsafe { ptr::try_c_str(text, argument) }?)
    };
    // SAFETY: `request` and `err_out` as this function's contract says.
    unsafe { guard_mut(err_out, request, "request", body) }
}

/// A C string argument as UTF-8; the error names the request field and the item.
fn utf8<'a>(text: &'a CStr, param: &'static str, item: &str) -> Result<&'a str, Failure> {
    text.to_str().map_err(|e| {
        Failure::invalid(
            param,
            format!(
                "{item} is not valid UTF-8 (invalid byte at offset {})",
                e.valid_up_to()
            ),
        )
    })
}

/// Creates an empty request: no messages, automatic language detection, no dictionary.
///
/// Ownership: the caller owns the result and frees it with `ctxscribe_request_free()`.
/// Returns NULL only if the library failed internally (a caught panic).
/// Thread safety: any thread. Does not block.
#[unsafe(no_mangle)]
pub extern "C" fn ctxscribe_request_new() -> *mut ctxscribe_request {
    ptr::new_handle(ctxscribe_request::default)
}

/// Frees a request. Transcripts made with it are not affected.
///
/// NULL rules: `ctxscribe_request_free(NULL)` does nothing.
/// Thread safety: once no other thread uses `request`. Does not block.
///
/// # Safety
///
/// `request` is NULL or a request from `ctxscribe_request_new()` not freed yet; it must
/// not be used afterwards.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn ctxscribe_request_free(request: *mut ctxscribe_request) {
    // SAFETY: NULL or owned by the caller and never used again (contract).
    unsafe { ptr::free(request) }
}

/// Adds a context message. `role` is a `ctxscribe_role` value
/// (`CTXSCRIBE_ROLE_SYSTEM` or `CTXSCRIBE_ROLE_USER`); `content` is UTF-8, kept
/// verbatim (not trimmed; empty is allowed).
///
/// Errors: `CTXSCRIBE_STATUS_INVALID_REQUEST` (param `"messages"`) for another `role`
/// value, content that is not UTF-8, or a limit passed: 100 messages, 16 KiB per
/// message, 64 KiB in all. On failure the request is unchanged.
/// NULL rules: `request` and `content` must not be NULL
/// (`CTXSCRIBE_STATUS_NULL_ARGUMENT`). `err_out` may be NULL; otherwise, on failure
/// only, `*err_out` receives an error object to free with `ctxscribe_error_free()`.
/// Ownership: `content` is copied; the caller keeps it.
/// Thread safety: not while another thread uses `request`. Does not block.
///
/// # Safety
///
/// `request` is NULL or a live request; `content` is NULL or a NUL-terminated string;
/// `err_out` is NULL or valid for writing one pointer.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn ctxscribe_request_add_message(
    request: *mut ctxscribe_request,
    role: u32,
    content: *const c_char,
    err_out: *mut *mut ctxscribe_error,
) -> ctxscribe_status {
    // SAFETY: `request` is NULL or a live request nobody else uses, `content` NULL or a
    // NUL-terminated string, `err_out` NULL or valid for writing one pointer (contract).
    unsafe {
        with_text(err_out, request, content, "content", |request, content| {
            request.add_message(role, content)
        })
    }
}

/// Allows one more language: a Whisper code (`"de"`) or English name (`"german"`),
/// case-insensitive. With no language added, the language is detected among all of
/// Whisper's; with one, the audio is transcribed in it; with several, detection is
/// limited to them. Duplicates are ignored.
///
/// Errors: `CTXSCRIBE_STATUS_INVALID_REQUEST` (param `"languages"`) for an unknown
/// language (`"xx"`, `"en-US"`), `"auto"` (add nothing instead), an empty string or
/// text that is not UTF-8. On failure the request is unchanged. A language the model
/// does not know (any but English on an English-only model) fails later, in
/// `ctxscribe_transcriber_transcribe()`.
/// NULL rules: `request` and `code` must not be NULL. `err_out` may be NULL; otherwise,
/// on failure only, `*err_out` receives an error object to free with
/// `ctxscribe_error_free()`.
/// Ownership: `code` is copied; the caller keeps it.
/// Thread safety: not while another thread uses `request`. Does not block.
///
/// # Safety
///
/// `request` is NULL or a live request; `code` is NULL or a NUL-terminated string;
/// `err_out` is NULL or valid for writing one pointer.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn ctxscribe_request_add_language(
    request: *mut ctxscribe_request,
    code: *const c_char,
    err_out: *mut *mut ctxscribe_error,
) -> ctxscribe_status {
    // SAFETY: `request` is NULL or a live request nobody else uses, `code` NULL or a
    // NUL-terminated string, `err_out` NULL or valid for writing one pointer (contract).
    unsafe {
        with_text(err_out, request, code, "code", |request, code| {
            push_checked(&mut request.languages, "languages", code, languages_from)
        })
    }
}

/// Adds a dictionary term: a name or word the transcript should spell exactly
/// (`"kubectl"`, `"Dr. Müller"`). It is trimmed; an empty term is ignored; a duplicate
/// (case-sensitive) is ignored.
///
/// Errors: `CTXSCRIBE_STATUS_INVALID_REQUEST` (param `"dictionary"`) for a term with a
/// control character, over 100 characters, more than 1000 distinct terms, or text that
/// is not UTF-8. On failure the request is unchanged.
/// NULL rules: `request` and `term` must not be NULL. `err_out` may be NULL; otherwise,
/// on failure only, `*err_out` receives an error object to free with
/// `ctxscribe_error_free()`.
/// Ownership: `term` is copied; the caller keeps it.
/// Thread safety: not while another thread uses `request`. Does not block.
///
/// # Safety
///
/// `request` is NULL or a live request; `term` is NULL or a NUL-terminated string;
/// `err_out` is NULL or valid for writing one pointer.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn ctxscribe_request_add_dictionary_term(
    request: *mut ctxscribe_request,
    term: *const c_char,
    err_out: *mut *mut ctxscribe_error,
) -> ctxscribe_status {
    // SAFETY: `request` is NULL or a live request nobody else uses, `term` NULL or a
    // NUL-terminated string, `err_out` NULL or valid for writing one pointer (contract).
    unsafe {
        with_text(err_out, request, term, "term", |request, term| {
            push_checked(&mut request.terms, "dictionary", term, |terms| {
                Dictionary::from_terms(terms)
            })
        })
    }
}

/// Replaces the messages with the `messages` field as sent on the wire: a JSON array of
/// `{"role": "system"|"user", "content": ...}` objects (`content` a string or OpenAI's
/// text parts); empty text or `null` means no messages. Same rules as the HTTP server.
///
/// Errors: `CTXSCRIBE_STATUS_INVALID_REQUEST` (param `"messages"`) for malformed JSON,
/// another role, a limit passed, or text that is not UTF-8. On failure the request is
/// unchanged.
/// NULL rules: `request` and `json` must not be NULL. `err_out` may be NULL; otherwise,
/// on failure only, `*err_out` receives an error object to free with
/// `ctxscribe_error_free()`.
/// Ownership: `json` is copied; the caller keeps it.
/// Thread safety: not while another thread uses `request`. Does not block.
///
/// # Safety
///
/// `request` is NULL or a live request; `json` is NULL or a NUL-terminated string;
/// `err_out` is NULL or valid for writing one pointer.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn ctxscribe_request_set_messages_json(
    request: *mut ctxscribe_request,
    json: *const c_char,
    err_out: *mut *mut ctxscribe_error,
) -> ctxscribe_status {
    // SAFETY: `request` is NULL or a live request nobody else uses, `json` NULL or a
    // NUL-terminated string, `err_out` NULL or valid for writing one pointer (contract).
    unsafe {
        with_text(err_out, request, json, "json", |request, json| {
            request.messages = parse_messages(utf8(json, "messages", "messages")?)?;
            Ok(())
        })
    }
}

/// Replaces the languages with the `languages` field as sent on the wire: `auto` (or
/// empty), a code or English name (`de`, `german`), a comma list (`de,en`) or a JSON
/// array (`["de","en"]`). Same rules as the HTTP server.
///
/// Errors: `CTXSCRIBE_STATUS_INVALID_REQUEST` (param `"languages"`) for an unknown
/// language, an empty list, a list containing `auto`, or text that is not UTF-8. On
/// failure the request is unchanged.
/// NULL rules: `request` and `text` must not be NULL. `err_out` may be NULL; otherwise,
/// on failure only, `*err_out` receives an error object to free with
/// `ctxscribe_error_free()`.
/// Ownership: `text` is copied; the caller keeps it.
/// Thread safety: not while another thread uses `request`. Does not block.
///
/// # Safety
///
/// `request` is NULL or a live request; `text` is NULL or a NUL-terminated string;
/// `err_out` is NULL or valid for writing one pointer.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn ctxscribe_request_set_languages(
    request: *mut ctxscribe_request,
    text: *const c_char,
    err_out: *mut *mut ctxscribe_error,
) -> ctxscribe_status {
    // SAFETY: `request` is NULL or a live request nobody else uses, `text` NULL or a
    // NUL-terminated string, `err_out` NULL or valid for writing one pointer (contract).
    unsafe {
        with_text(err_out, request, text, "text", |request, text| {
            let languages = parse_languages(utf8(text, "languages", "languages")?)?;
            request.languages = codes_of(&languages);
            Ok(())
        })
    }
}

/// Replaces the dictionary with the `dictionary` field as sent on the wire: a comma list
/// (`kubectl, Dr. Müller`) or a JSON array of strings; empty text means no terms. Same
/// rules as the HTTP server.
///
/// Errors: `CTXSCRIBE_STATUS_INVALID_REQUEST` (param `"dictionary"`) for malformed
/// JSON, a term with a control character or over 100 characters, more than 1000 terms,
/// or text that is not UTF-8. On failure the request is unchanged.
/// NULL rules: `request` and `text` must not be NULL. `err_out` may be NULL; otherwise,
/// on failure only, `*err_out` receives an error object to free with
/// `ctxscribe_error_free()`.
/// Ownership: `text` is copied; the caller keeps it.
/// Thread safety: not while another thread uses `request`. Does not block.
///
/// # Safety
///
/// `request` is NULL or a live request; `text` is NULL or a NUL-terminated string;
/// `err_out` is NULL or valid for writing one pointer.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn ctxscribe_request_set_dictionary(
    request: *mut ctxscribe_request,
    text: *const c_char,
    err_out: *mut *mut ctxscribe_error,
) -> ctxscribe_status {
    // SAFETY: `request` is NULL or a live request nobody else uses, `text` NULL or a
    // NUL-terminated string, `err_out` NULL or valid for writing one pointer (contract).
    unsafe {
        with_text(err_out, request, text, "text", |request, text| {
            let dictionary = parse_dictionary(utf8(text, "dictionary", "dictionary")?)?;
            request.terms = dictionary.terms().to_vec();
            Ok(())
        })
    }
}

/// Adds a spoken form of a dictionary term: how the term is said when that is not how
/// it is spelled (`"Nguyen"`, `"win"`). The form is matched in the transcript like the
/// forms derived from the term's spelling; the term is still written only where one of
/// its forms was heard. Same rules as the HTTP server's `sounds_like` field.
///
/// Errors: `CTXSCRIBE_STATUS_INVALID_REQUEST` (param `"sounds_like"`) when `term` is
/// not a dictionary term of the request (add the term first), for a form that is empty
/// or over 100 characters or has a character other than letters, spaces, apostrophes
/// and hyphens, for more than 10 distinct forms of one term, or text that is not UTF-8.
/// On failure the request is unchanged. A later dictionary that drops the term fails
/// in `ctxscribe_transcriber_transcribe()`.
/// NULL rules: `request`, `term` and `form` must not be NULL. `err_out` may be NULL;
/// otherwise, on failure only, `*err_out` receives an error object to free with
/// `ctxscribe_error_free()`.
/// Ownership: `term` and `form` are copied; the caller keeps them.
/// Thread safety: not while another thread uses `request`. Does not block.
///
/// # Safety
///
/// `request` is NULL or a live request; `term` and `form` are NULL or NUL-terminated
/// strings; `err_out` is NULL or valid for writing one pointer.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn ctxscribe_request_add_sounds_like(
    request: *mut ctxscribe_request,
    term: *const c_char,
    form: *const c_char,
    err_out: *mut *mut ctxscribe_error,
) -> ctxscribe_status {
    // SAFETY: `request` is NULL or a live request nobody else uses, `term` and `form`
    // NULL or NUL-terminated strings, `err_out` NULL or valid for writing one pointer
    // (contract).
    unsafe {
        with_text(err_out, request, term, "term", |request, term| {
            // SAFETY: NULL or a NUL-terminated string, by this function's contract.
            let form = ptr::try_c_str(form, "form")?;
            request.add_sounds_like(term, form)
        })
    }
}

/// Replaces the spoken forms with the `sounds_like` field as sent on the wire: a JSON
/// object of dictionary term -> array of spoken forms (`{"Nguyen": ["win"]}`); empty
/// text or `null` means none. Same rules as the HTTP server.
///
/// Errors: `CTXSCRIBE_STATUS_INVALID_REQUEST` (param `"sounds_like"`) for malformed
/// JSON, another shape, a key that is not a dictionary term of the request (set the
/// dictionary first), a form as `ctxscribe_request_add_sounds_like()` rejects, or text
/// that is not UTF-8. On failure the request is unchanged.
/// NULL rules: `request` and `json` must not be NULL. `err_out` may be NULL; otherwise,
/// on failure only, `*err_out` receives an error object to free with
/// `ctxscribe_error_free()`.
/// Ownership: `json` is copied; the caller keeps it.
/// Thread safety: not while another thread uses `request`. Does not block.
///
/// # Safety
///
/// `request` is NULL or a live request; `json` is NULL or a NUL-terminated string;
/// `err_out` is NULL or valid for writing one pointer.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn ctxscribe_request_set_sounds_like_json(
    request: *mut ctxscribe_request,
    json: *const c_char,
    err_out: *mut *mut ctxscribe_error,
) -> ctxscribe_status {
    // SAFETY: `request` is NULL or a live request nobody else uses, `json` NULL or a
    // NUL-terminated string, `err_out` NULL or valid for writing one pointer (contract).
    unsafe {
        with_text(err_out, request, json, "json", |request, json| {
            let sounds_like = parse_sounds_like(utf8(json, "sounds_like", "sounds_like")?)?;
            dictionary_with(&request.terms, &sounds_like)?;
            request.sounds_like = sounds_like;
            Ok(())
        })
    }
}
