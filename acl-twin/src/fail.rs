//! Status codes and the per-thread error text (`aclGetRecentErrMsg`).

use std::cell::RefCell;
use std::ffi::{c_char, CString};

use ascendc_sys::{aclError, ACL_ERROR_INTERNAL_ERROR, ACL_SUCCESS};

/// A failed call: its status code and what went wrong.
#[derive(Clone, Debug)]
pub(crate) struct Fail {
    pub code: aclError,
    pub msg: String,
}

/// The result of a call's body.
pub(crate) type R<T> = Result<T, Fail>;

/// A failure with `code` and `msg`.
pub(crate) fn fail<T>(code: aclError, msg: impl Into<String>) -> R<T> {
    Err(Fail {
        code,
        msg: msg.into(),
    })
}

thread_local! {
    /// The calling thread's latest error text.
    static RECENT: RefCell<Option<CString>> = const { RefCell::new(None) };
}

fn set_recent(text: String) {
    let c = CString::new(text.replace('\0', " ")).unwrap_or_default();
    RECENT.with(|r| *r.borrow_mut() = Some(c));
}

/// The text `aclGetRecentErrMsg` returns: null if no call of this thread failed since the last
/// read (the text is then kept until the thread's next call of this function).
pub(crate) fn take_recent() -> *const c_char {
    thread_local! {
        static HANDED_OUT: RefCell<Option<CString>> = const { RefCell::new(None) };
    }
    let text = RECENT.with(|r| r.borrow_mut().take());
    HANDED_OUT.with(|h| {
        let mut h = h.borrow_mut();
        *h = text;
        h.as_ref().map_or(std::ptr::null(), |c| c.as_ptr())
    })
}

/// Runs the body of the exported function `name`: its failure becomes the status code and
/// the thread's error text; a panic (a bug of acl-twin) becomes `ACL_ERROR_INTERNAL_ERROR`,
/// never an unwind into C.
pub(crate) fn call(name: &str, body: impl FnOnce() -> R<()>) -> aclError {
    match std::panic::catch_unwind(std::panic::AssertUnwindSafe(body)) {
        Ok(Ok(())) => ACL_SUCCESS,
        Ok(Err(f)) => {
            set_recent(format!("{name}: {} (error {})", f.msg, f.code));
            f.code
        }
        Err(p) => {
            let what = p
                .downcast_ref::<&str>()
                .map(|s| s.to_string())
                .or_else(|| p.downcast_ref::<String>().cloned())
                .unwrap_or_default();
            set_recent(format!("{name}: internal error of acl-twin: {what}"));
            ACL_ERROR_INTERNAL_ERROR
        }
    }
}

/// `Err(INVALID_PARAM)` naming `what` if `p` is null.
pub(crate) fn non_null<T>(p: *const T, what: &str) -> R<()> {
    if p.is_null() {
        return fail(
            ascendc_sys::ACL_ERROR_INVALID_PARAM,
            format!("{what} is a null pointer"),
        );
    }
    Ok(())
}
