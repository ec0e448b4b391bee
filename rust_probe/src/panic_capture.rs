//! Turns a panic inside burn into data: its message and location.
//!
//! A process-wide panic hook is installed once. While a thread is inside
//! [`capture`], a panic on that thread is recorded (message, file, line,
//! column) instead of printed; panics anywhere else go to the hook that was
//! there before, so PyO3's and the default reporting are unchanged.

use std::any::Any;
use std::cell::{Cell, RefCell};
use std::panic::{self, AssertUnwindSafe};
use std::sync::Once;

/// What a caught panic said and where it came from.
#[derive(Clone, Debug, PartialEq, Eq, serde::Serialize)]
pub struct PanicInfo {
    pub message: String,
    pub file: String,
    pub line: u32,
    pub column: u32,
}

impl PanicInfo {
    /// `file:line:column`, as Rust prints it.
    pub fn location(&self) -> String {
        format!("{}:{}:{}", self.file, self.line, self.column)
    }
}

thread_local! {
    static CAPTURING: Cell<bool> = const { Cell::new(false) };
    static CAUGHT: RefCell<Option<PanicInfo>> = const { RefCell::new(None) };
}

static INSTALL: Once = Once::new();

fn payload_message(payload: &dyn Any) -> String {
    if let Some(s) = payload.downcast_ref::<&str>() {
        (*s).to_owned()
    } else if let Some(s) = payload.downcast_ref::<String>() {
        s.clone()
    } else {
        "<panic payload that is not a string>".to_owned()
    }
}

fn install_hook() {
    INSTALL.call_once(|| {
        let previous = panic::take_hook();
        panic::set_hook(Box::new(move |info| {
            if CAPTURING.with(Cell::get) {
                let (file, line, column) = info
                    .location()
                    .map(|l| (l.file().to_owned(), l.line(), l.column()))
                    .unwrap_or_else(|| ("<unknown>".to_owned(), 0, 0));
                let record = PanicInfo {
                    message: payload_message(info.payload()),
                    file,
                    line,
                    column,
                };
                // Keep the first panic: a second one while unwinding is a consequence.
                CAUGHT.with(|c| {
                    c.borrow_mut().get_or_insert(record);
                });
            } else {
                previous(info);
            }
        }));
    });
}

/// Runs `f`; a panic inside it on this thread comes back as `Err(PanicInfo)`.
pub fn capture<R>(f: impl FnOnce() -> R) -> Result<R, PanicInfo> {
    install_hook();
    CAUGHT.with(|c| c.borrow_mut().take());
    let was_capturing = CAPTURING.with(|c| c.replace(true));
    let result = panic::catch_unwind(AssertUnwindSafe(f));
    CAPTURING.with(|c| c.set(was_capturing));
    result.map_err(|payload| {
        CAUGHT
            .with(|c| c.borrow_mut().take())
            .unwrap_or_else(|| PanicInfo {
                message: payload_message(payload.as_ref()),
                file: "<unknown>".to_owned(),
                line: 0,
                column: 0,
            })
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_panic_becomes_data_with_its_location() {
        let line = line!() + 1;
        let caught = capture(|| panic!("boom {}", 7)).unwrap_err();
        assert_eq!(caught.message, "boom 7");
        assert!(caught.file.ends_with("panic_capture.rs"), "{}", caught.file);
        assert_eq!(caught.line, line);
    }

    #[test]
    fn a_normal_return_passes_through() {
        assert_eq!(capture(|| 41 + 1), Ok(42));
    }
}
