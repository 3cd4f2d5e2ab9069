//! Reading the files a plan is made of (policy, tag and tool files, and the
//! data files a policy references: the transitions file, the semantic
//! model's three files) without trusting what they are.
//!
//! A path may name something that is not a file: a FIFO (a read blocks until
//! a writer comes, which may be never: `check` hangs, a reload thread stops
//! for good), a device (`/dev/zero` never ends: the read eats memory until
//! the process is killed), a directory. So [`read_data_file`]
//!
//! 1. follows symlinks and refuses anything that is not a regular file
//!    ([`std::fs::Metadata::is_file`]);
//! 2. opens it without blocking (`O_NONBLOCK` on Unix: opening a FIFO with no
//!    writer returns at once) and checks the opened handle again, so a file
//!    swapped for a FIFO between the two steps is refused too;
//! 3. reads at most a documented number of bytes: [`MODEL_FILE_LIMIT`] for
//!    the semantic model's files, [`TEXT_FILE_LIMIT`] for TOML and JSON
//!    files. A larger file is refused with both sizes in the message.
//!
//! Errors are [`std::io::Error`]s whose message says what was wrong; the
//! callers put them at the referencing key (file:line:column).

use std::io::Read;
use std::path::Path;

/// Largest file of a semantic model folder (`tokenizer.json`,
/// `model.safetensors`, `config.json`) that is read: 256 MiB (268,435,456
/// bytes). The shipped model's largest file is 4.5 MB; a Model2Vec model of
/// 30,000 rows × 1,024 float32 dimensions is 123 MB.
pub const MODEL_FILE_LIMIT: u64 = 256 * 1024 * 1024;

/// Largest TOML or JSON file that is read (policy, tag files, `--tools`
/// catalogs, the transitions file): 64 MiB (67,108,864 bytes). The shipped
/// policies and tags are under 100 KB each.
pub const TEXT_FILE_LIMIT: u64 = 64 * 1024 * 1024;

/// Reads the regular file at `path` (symlinks followed), at most `limit`
/// bytes, without blocking on a FIFO.
///
/// # Errors
/// The error of opening or reading the file (a missing file keeps
/// [`std::io::ErrorKind::NotFound`]); [`std::io::ErrorKind::InvalidInput`]
/// when the path is not a regular file (a FIFO, a device, a directory, a
/// socket: the message says which) or holds more than `limit` bytes (the
/// message gives the limit).
pub fn read_data_file(path: &Path, limit: u64) -> std::io::Result<Vec<u8>> {
    check_kind(&std::fs::metadata(path).map_err(|e| dangling(path, e))?)?;
    let mut options = std::fs::OpenOptions::new();
    options.read(true);
    #[cfg(unix)]
    {
        use std::os::unix::fs::OpenOptionsExt;
        options.custom_flags(libc::O_NONBLOCK);
    }
    let file = options.open(path)?;
    let meta = file.metadata()?;
    check_kind(&meta)?;
    if meta.len() > limit {
        return Err(too_large(meta.len(), limit));
    }
    let mut bytes = Vec::with_capacity(usize::try_from(meta.len()).unwrap_or(0));
    // One byte more than the limit tells a file that grew past it.
    file.take(limit.saturating_add(1)).read_to_end(&mut bytes)?;
    if bytes.len() as u64 > limit {
        return Err(too_large(bytes.len() as u64, limit));
    }
    Ok(bytes)
}

/// [`read_data_file`] with [`TEXT_FILE_LIMIT`], as UTF-8 text.
///
/// # Errors
/// As [`read_data_file`]; [`std::io::ErrorKind::InvalidData`] when the bytes
/// are not UTF-8 (the message gives the offset of the first bad byte).
pub fn read_text_file(path: &Path) -> std::io::Result<String> {
    let bytes = read_data_file(path, TEXT_FILE_LIMIT)?;
    decode_text(bytes).map_err(|e| std::io::Error::new(std::io::ErrorKind::InvalidData, e))
}

/// How `bytes`, the start of a file, show UTF-16 (which Windows tools such
/// as PowerShell's `>` and Notepad's "Unicode" write), if they do: `byte-order
/// mark FF FE` (little-endian) or `FE FF` (big-endian); without a mark,
/// `no byte-order mark; every second byte is 0` when, in the first 64 code
/// units, at least three quarters have a zero high byte on one side and
/// none on the other (text in the Latin script; neither JSON nor TOML holds
/// a NUL byte). `None` for anything else.
pub fn utf16_mark(bytes: &[u8]) -> Option<&'static str> {
    if bytes.starts_with(&[0xFF, 0xFE]) {
        return Some("byte-order mark FF FE");
    }
    if bytes.starts_with(&[0xFE, 0xFF]) {
        return Some("byte-order mark FE FF");
    }
    let units: Vec<&[u8]> = bytes.chunks_exact(2).take(64).collect();
    if units.is_empty() {
        return None;
    }
    let zero = |i: usize| units.iter().filter(|u| u[i] == 0).count();
    let (even, odd) = (zero(0), zero(1));
    let most = units.len() * 3 / 4;
    ((odd >= most.max(1) && even == 0) || (even >= most.max(1) && odd == 0))
        .then_some("no byte-order mark; every second byte is 0")
}

/// The error for a file whose bytes are UTF-16 ([`utf16_mark`]): `this
/// file looks like UTF-16 (byte-order mark FF FE); save it as UTF-8`.
pub fn utf16_message(mark: &str) -> String {
    format!("this file looks like UTF-16 ({mark}); save it as UTF-8")
}

/// The text of a file's bytes: UTF-8, with a leading byte-order mark
/// (EF BB BF, written by some Windows editors) dropped. Bytes that are not
/// UTF-8 are an error naming the byte offset in the file of the first bad
/// byte (0-based, the mark counted) and its line and column
/// ([`utf8_line_column`]): `not valid UTF-8 at byte 17 (line 2, column 8)`.
/// UTF-16 (with or without its byte-order mark) is named as such
/// ([`utf16_message`]). Every file the CLI and the loader read as text
/// comes through here (traces and audit logs, read line by line, check
/// their first line with [`utf16_mark`]).
pub fn decode_text(mut bytes: Vec<u8>) -> Result<String, String> {
    if let Some(mark) = utf16_mark(&bytes) {
        return Err(utf16_message(mark));
    }
    let mut bom = 0;
    if bytes.starts_with(&[0xEF, 0xBB, 0xBF]) {
        bytes.drain(..3);
        bom = 3;
    }
    String::from_utf8(bytes).map_err(|e| {
        let at = e.utf8_error().valid_up_to();
        let (line, column) = utf8_line_column(&e.as_bytes()[..at]);
        format!(
            "not valid UTF-8 at byte {} (line {line}, column {column})",
            at + bom
        )
    })
}

/// The 1-based line and column (in characters, as every other location)
/// of the byte just after `valid`, the valid UTF-8 text before a bad byte.
pub fn utf8_line_column(valid: &[u8]) -> (usize, usize) {
    let line = 1 + valid.iter().filter(|&&b| b == b'\n').count();
    let start = valid.iter().rposition(|&b| b == b'\n').map_or(0, |i| i + 1);
    let column =
        1 + std::str::from_utf8(&valid[start..]).map_or(valid.len() - start, |s| s.chars().count());
    (line, column)
}

/// `e`, the error of following `path`, reworded when `path` is a symbolic
/// link to nothing: "a symbolic link to `T`, which does not exist" (the
/// kind stays `NotFound`); a broken link in a tags folder is named, not
/// skipped (issue 29).
fn dangling(path: &Path, e: std::io::Error) -> std::io::Error {
    match (e.kind(), std::fs::read_link(path)) {
        (std::io::ErrorKind::NotFound, Ok(target)) => std::io::Error::new(
            std::io::ErrorKind::NotFound,
            format!(
                "a symbolic link to `{}`, which does not exist",
                target.display()
            ),
        ),
        _ => e,
    }
}

/// Why the file `meta` describes is not read as a data file ("not a
/// regular file (a character device)"), or `None` for a regular file: for
/// the command line's checks of a path before it is read.
pub fn not_regular(meta: &std::fs::Metadata) -> Option<String> {
    check_kind(meta).err().map(|e| e.to_string())
}

fn check_kind(meta: &std::fs::Metadata) -> std::io::Result<()> {
    if meta.is_file() {
        return Ok(());
    }
    let ft = meta.file_type();
    let what = if ft.is_dir() {
        "a directory"
    } else {
        kind_name(&ft)
    };
    Err(std::io::Error::new(
        std::io::ErrorKind::InvalidInput,
        format!("not a regular file ({what}); only regular files are read"),
    ))
}

#[cfg(unix)]
fn kind_name(ft: &std::fs::FileType) -> &'static str {
    use std::os::unix::fs::FileTypeExt;
    if ft.is_fifo() {
        "a FIFO"
    } else if ft.is_char_device() {
        "a character device"
    } else if ft.is_block_device() {
        "a block device"
    } else if ft.is_socket() {
        "a socket"
    } else {
        "not a file"
    }
}

#[cfg(not(unix))]
fn kind_name(_: &std::fs::FileType) -> &'static str {
    "not a file"
}

fn too_large(len: u64, limit: u64) -> std::io::Error {
    std::io::Error::new(
        std::io::ErrorKind::InvalidInput,
        format!(
            "{len} bytes or more: larger than the limit of {limit} bytes ({} MiB) for this kind of file",
            limit / (1024 * 1024)
        ),
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reads_a_regular_file_and_a_symlink_to_one() {
        let d = tempfile::tempdir().unwrap();
        let p = d.path().join("a.toml");
        std::fs::write(&p, "x = 1\n").unwrap();
        assert_eq!(read_text_file(&p).unwrap(), "x = 1\n");
        #[cfg(unix)]
        {
            let l = d.path().join("l.toml");
            std::os::unix::fs::symlink(&p, &l).unwrap();
            assert_eq!(read_text_file(&l).unwrap(), "x = 1\n");
        }
    }

    #[test]
    fn utf16_is_named_with_or_without_its_mark() {
        let le: Vec<u8> = "{\"a\": 1}"
            .encode_utf16()
            .flat_map(u16::to_le_bytes)
            .collect();
        let be: Vec<u8> = "x = 1\n"
            .encode_utf16()
            .flat_map(u16::to_be_bytes)
            .collect();
        let marked = [vec![0xFF, 0xFE], le.clone()].concat();
        assert_eq!(
            decode_text(marked).unwrap_err(),
            "this file looks like UTF-16 (byte-order mark FF FE); save it as UTF-8"
        );
        let marked = [vec![0xFE, 0xFF], be.clone()].concat();
        assert!(
            decode_text(marked)
                .unwrap_err()
                .contains("byte-order mark FE FF")
        );
        for bare in [le, be] {
            assert!(
                decode_text(bare)
                    .unwrap_err()
                    .contains("UTF-16 (no byte-order mark; every second byte is 0)")
            );
        }
        // UTF-8 text, CJK included, is not taken for UTF-16
        assert_eq!(
            decode_text("帮我 x = 1".as_bytes().to_vec()).unwrap(),
            "帮我 x = 1"
        );
        assert_eq!(utf16_mark(b"a"), None);
    }

    #[test]
    fn refuses_a_directory_and_keeps_not_found() {
        let d = tempfile::tempdir().unwrap();
        let e = read_data_file(d.path(), 10).unwrap_err();
        assert_eq!(e.kind(), std::io::ErrorKind::InvalidInput);
        assert!(e.to_string().contains("a directory"), "{e}");
        let e = read_data_file(&d.path().join("none"), 10).unwrap_err();
        assert_eq!(e.kind(), std::io::ErrorKind::NotFound);
    }

    #[test]
    fn refuses_a_file_over_the_limit() {
        let d = tempfile::tempdir().unwrap();
        let p = d.path().join("big.json");
        std::fs::write(&p, vec![b' '; 11]).unwrap();
        assert_eq!(read_data_file(&p, 11).unwrap().len(), 11);
        let e = read_data_file(&p, 10).unwrap_err();
        assert!(e.to_string().contains("limit of 10 bytes"), "{e}");
    }

    #[cfg(unix)]
    #[test]
    fn refuses_a_fifo_without_blocking_and_dev_zero_without_reading_it() {
        let d = tempfile::tempdir().unwrap();
        let fifo = d.path().join("tokenizer.json");
        let c = std::ffi::CString::new(fifo.as_os_str().as_encoded_bytes()).unwrap();
        // SAFETY: a valid NUL-terminated path.
        assert_eq!(unsafe { libc::mkfifo(c.as_ptr(), 0o600) }, 0);
        let e = read_data_file(&fifo, MODEL_FILE_LIMIT).unwrap_err();
        assert!(e.to_string().contains("a FIFO"), "{e}");
        let zero = d.path().join("model.safetensors");
        std::os::unix::fs::symlink("/dev/zero", &zero).unwrap();
        let e = read_data_file(&zero, MODEL_FILE_LIMIT).unwrap_err();
        assert!(e.to_string().contains("a character device"), "{e}");
    }
}
