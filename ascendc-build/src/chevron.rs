//! Kernel launches written `kernel<<<numBlocks, dynUBufSize, stream>>>(args...)` in an AscendC
//! program, rewritten to calls a host C++ compiler accepts (see `asc_twin_chevron.h` in the
//! twin's headers for what the call does).

/// Rewrites every `callee<<<config>>>` of `src` (outside comments, string and character
/// literals) to `::asc_twin::Chevron<&callee>("callee", config)`, leaving the argument list that
/// follows as it is. Line breaks are kept, so the compiler's line numbers stay the source's.
///
/// The callee is the name before `<<<`: an identifier, qualified with `::` or not, with its
/// template arguments if it has any (`add_custom<half, 8>`).
///
/// ```
/// let src = "add_custom<half><<<8, nullptr, stream>>>(x, y, z);";
/// assert_eq!(
///     ascendc_build::chevrons_to_calls(src).unwrap(),
///     "::asc_twin::Chevron<&add_custom<half>>(\"add_custom<half>\", 8, nullptr, stream)(x, y, z);"
/// );
/// ```
pub fn chevrons_to_calls(src: &str) -> Result<String, String> {
    let b = src.as_bytes();
    let mut out = String::with_capacity(src.len() + 64);
    let mut copied = 0; // bytes of `src` already in `out`
    let mut i = 0;
    while i < b.len() {
        match b[i] {
            b'/' if b.get(i + 1) == Some(&b'/') => i = skip_to(b, i, b"\n"),
            b'/' if b.get(i + 1) == Some(&b'*') => i = skip_to(b, i + 2, b"*/"),
            b'"' | b'\'' => i = skip_literal(b, i),
            b'<' if b[i..].starts_with(b"<<<") => {
                let start = callee_start(b, i).ok_or_else(|| {
                    format!(
                        "line {}: `<<<` without a kernel name before it",
                        line_of(b, i)
                    )
                })?;
                let callee = src[start..i].trim_end();
                let close = config_end(b, i + 3)
                    .ok_or_else(|| format!("line {}: `<<<` without its `>>>`", line_of(b, i)))?;
                let config = &src[i + 3..close];
                let name: String = callee.split_whitespace().collect::<Vec<_>>().join(" ");
                out.push_str(&src[copied..start]);
                out.push_str(&format!(
                    "::asc_twin::Chevron<&{callee}>(\"{name}\", {config})"
                ));
                i = close + 3;
                copied = i;
            }
            _ => i += 1,
        }
    }
    out.push_str(&src[copied..]);
    Ok(out)
}

/// The index just past the first `end` at or after `from` (or the end of `b`).
fn skip_to(b: &[u8], from: usize, end: &[u8]) -> usize {
    b[from..]
        .windows(end.len())
        .position(|w| w == end)
        .map_or(b.len(), |p| from + p + end.len())
}

/// The index just past the string or character literal that starts at `at` (escapes honoured;
/// a raw string `R"d(...)d"` runs to its own delimiter).
fn skip_literal(b: &[u8], at: usize) -> usize {
    let quote = b[at];
    if quote == b'"' && at > 0 && b[at - 1] == b'R' {
        if let Some(open) = b[at..].iter().position(|&c| c == b'(') {
            let delim = &b[at + 1..at + open];
            let mut end = Vec::with_capacity(delim.len() + 2);
            end.push(b')');
            end.extend_from_slice(delim);
            end.push(b'"');
            return skip_to(b, at + open, &end);
        }
    }
    if quote == b'\'' && at > 0 && b[at - 1].is_ascii_hexdigit() {
        // A digit separator (1'000'000), not a character literal.
        return at + 1;
    }
    let mut i = at + 1;
    while i < b.len() {
        match b[i] {
            b'\\' => i += 2,
            c if c == quote => return i + 1,
            b'\n' => return i + 1,
            _ => i += 1,
        }
    }
    b.len()
}

/// Where the callee before the `<<<` at `at` starts: its name, `::` qualifications and template
/// arguments, whitespace before `<<<` allowed.
fn callee_start(b: &[u8], at: usize) -> Option<usize> {
    let mut i = at;
    while i > 0 && b[i - 1].is_ascii_whitespace() {
        i -= 1;
    }
    if i > 0 && b[i - 1] == b'>' {
        // Template arguments: back to the matching `<`.
        let mut depth = 0usize;
        while i > 0 {
            i -= 1;
            match b[i] {
                b'>' => depth += 1,
                b'<' => {
                    depth -= 1;
                    if depth == 0 {
                        break;
                    }
                }
                _ => {}
            }
        }
        if depth != 0 {
            return None;
        }
        while i > 0 && b[i - 1].is_ascii_whitespace() {
            i -= 1;
        }
    }
    let end = i;
    while i > 0 && (b[i - 1].is_ascii_alphanumeric() || b[i - 1] == b'_' || b[i - 1] == b':') {
        i -= 1;
    }
    (i < end && !b[i].is_ascii_digit()).then_some(i)
}

/// The index of the `>>>` closing a launch configuration that starts at `from` (brackets in the
/// configuration balanced).
fn config_end(b: &[u8], from: usize) -> Option<usize> {
    let mut depth = 0i32;
    let mut i = from;
    while i < b.len() {
        match b[i] {
            b'(' | b'[' | b'{' => depth += 1,
            b')' | b']' | b'}' => depth -= 1,
            b'>' if depth == 0 && b[i..].starts_with(b">>>") => return Some(i),
            b'"' | b'\'' => {
                i = skip_literal(b, i);
                continue;
            }
            _ => {}
        }
        i += 1;
    }
    None
}

fn line_of(b: &[u8], at: usize) -> usize {
    1 + b[..at].iter().filter(|&&c| c == b'\n').count()
}

#[cfg(test)]
mod tests {
    use super::chevrons_to_calls;

    #[test]
    fn a_launch_becomes_a_call_and_everything_else_stays() {
        let src = "// k<<<1, 0, s>>>(a)\nconst char *t = \"k<<<1>>>\";\n\
                   ns::add<half,\n  8><<<blocks, nullptr,\n stream>>>(x, y);\nint a = b << 2;\n";
        let out = chevrons_to_calls(src).unwrap();
        assert_eq!(
            out,
            "// k<<<1, 0, s>>>(a)\nconst char *t = \"k<<<1>>>\";\n\
             ::asc_twin::Chevron<&ns::add<half,\n  8>>(\"ns::add<half, 8>\", blocks, nullptr,\n stream)(x, y);\nint a = b << 2;\n"
        );
        assert_eq!(src.lines().count(), out.lines().count());
    }

    #[test]
    fn a_launch_without_a_name_or_an_end_is_an_error() {
        assert!(chevrons_to_calls("(<<<1, 0, s>>>)(a);")
            .unwrap_err()
            .contains("line 1"));
        assert!(chevrons_to_calls("k<<<1, 0, s)(a);")
            .unwrap_err()
            .contains("without its `>>>`"));
    }
}
