"""Messages as every gpucts report writes them: one line for a headline, and a cap on the size of
a whole message, so that a runaway exception text cannot make a JUnit file or journal unreadable."""

# At most this many bytes of UTF-8 of one message are kept; the rest is replaced by a note.
MESSAGE_LIMIT_BYTES = 65536


def cut_message(text: str, limit: int = MESSAGE_LIMIT_BYTES) -> str:
    """`text` whole when its UTF-8 is at most `limit` bytes; else its first bytes up to `limit`
    (never half a character) and "\\n[gpucts: message cut, N bytes in all]", N the whole size."""
    text = str(text)
    data = text.encode("utf-8", "surrogateescape")
    if len(data) <= limit:
        return text
    cut = limit
    while cut > 0 and (data[cut] & 0xC0) == 0x80:  # a continuation byte: inside a character
        cut -= 1
    kept = data[:cut].decode("utf-8", "surrogateescape")
    return kept + "\n[gpucts: message cut, %d bytes in all]" % len(data)


def one_line(text, limit: int = 2000) -> str:
    """Whitespace runs as one space; longer than `limit` characters: cut, ending in "..."."""
    text = " ".join(str(text).split())
    return text if len(text) <= limit else text[: limit - 3] + "..."
