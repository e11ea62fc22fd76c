"""`visible`: the one neutraliser of outside text for the terminal and the console."""

from __future__ import annotations

import unicodedata

from hypothesis import given
from hypothesis import strategies as st

from keep_sdk.contract.text import HIDDEN, visible

BIDI = [chr(c) for c in (0x061C, 0x200E, 0x200F, *range(0x202A, 0x202F), *range(0x2066, 0x206A))]
CONTROLS = [chr(c) for c in (*range(0x20), *range(0x7F, 0xA0), 0x2028, 0x2029)]

texts = st.lists(
    st.one_of(st.sampled_from(BIDI + CONTROLS + ["\\", "\\x1b", "é", "✓", "[b]"]), st.text()),
    max_size=12,
).map("".join)


def _hidden(c: str) -> bool:
    return unicodedata.category(c) == "Cc" or c in BIDI or c in "\u2028\u2029"


def _unescape(shown: str, original: str) -> str:
    """Replace each escape `visible` made, in order, by the character it stands for."""
    out, i = [], 0
    for c in original:
        if _hidden(c):
            escape = f"\\x{ord(c):02x}" if ord(c) < 0x100 else f"\\u{ord(c):04x}"
            assert shown.startswith(escape, i)
            out.append(c)
            i += len(escape)
        else:
            assert shown[i] == c
            out.append(c)
            i += 1
    assert i == len(shown)
    return "".join(out)


@given(texts)
def test_no_control_or_bidi_character_survives(text: str) -> None:
    shown = visible(text)
    assert not any(_hidden(c) for c in shown)
    assert not any(ord(c) in HIDDEN for c in shown)


@given(texts)
def test_every_visible_character_is_kept_in_order_and_each_hidden_one_is_its_escape(
    text: str,
) -> None:
    assert _unescape(visible(text), text) == text


def test_an_email_subject_with_an_escape_sequence_and_an_override() -> None:
    subject = "Invoice \x1b[31mPAID\x1b[0m \u202egnp.exe"
    assert visible(subject) == "Invoice \\x1b[31mPAID\\x1b[0m \\u202egnp.exe"


def test_plain_text_is_returned_as_it_is() -> None:
    plain = "Passport of Ana — é ✓ [bold]"
    assert visible(plain) is plain
