"""CSRF tokens, the withdrawal digest, resume codes, the response headers every page carries,
and the names of the session cookie and of the admin token's environment variable."""

from __future__ import annotations

import hashlib
import hmac
import secrets

__all__ = [
    "ADMIN_TOKEN_ENV",
    "RESUME_CODE_LENGTH",
    "SESSION_COOKIE",
    "csrf_token",
    "csrf_valid",
    "new_resume_code",
    "resume_code_matches",
    "resume_digest",
    "security_headers",
    "withdrawal_digest",
]

#: the environment variable holding the admin token (no variable: no admin route)
ADMIN_TOKEN_ENV = "CHOICEAUDIT_HUMAN_ADMIN_TOKEN"
#: the cookie a participant's session rides on
SESSION_COOKIE = "ca_session"

# the label deriving the withdrawal key from the study key; it has no ":", so it is never the
# message of a CSRF token ("purpose:session") and the two uses of the study key stay apart
_WITHDRAWAL_KEY_LABEL = b"choiceaudit.human/withdrawn-panel-id/v1"
_RESUME_KEY_LABEL = b"choiceaudit.human/resume-code/v1"

# Crockford's base32 alphabet: no I, L, O or U, so a code read off a screen or a note is not
# mistyped as another; 12 characters are 60 bits
_RESUME_ALPHABET = "0123456789ABCDEFGHJKMNPQRSTVWXYZ"
RESUME_CODE_LENGTH = 12
_READ_AS_DIGIT = str.maketrans("OIL", "011")
# what any stored digest is compared with when a panel id has none (an unknown id, or one
# enrolled before resume codes), so the refusal takes the same work either way
_NO_DIGEST = "0" * 64


def csrf_token(secret: bytes, session: str, purpose: str) -> str:
    """The synchroniser token of a form: HMAC-SHA256 of the session (a participant's token or
    the consent page's pre-session cookie) and the form's purpose, under the study key."""
    return hmac.new(secret, f"{purpose}:{session}".encode(), hashlib.sha256).hexdigest()


def csrf_valid(secret: bytes, session: str | None, purpose: str, given: str | None) -> bool:
    if not session or not given:
        return False
    return hmac.compare_digest(csrf_token(secret, session, purpose), given)


def withdrawal_digest(secret: bytes, panel_id: str) -> str:
    """What a study keeps of a withdrawn panel id: HMAC-SHA256 of the id under a key derived
    from the study key for this purpose alone (HMAC of a fixed label). It cannot be turned back
    into the id, nor checked against a guessed id, without the study's ``secret`` file."""
    key = hmac.new(secret, _WITHDRAWAL_KEY_LABEL, hashlib.sha256).digest()
    return hmac.new(key, panel_id.encode(), hashlib.sha256).hexdigest()


def new_resume_code() -> str:
    """A fresh resume code, shown to a participant once, at consent: ``XXXX-XXXX-XXXX``."""
    raw = "".join(secrets.choice(_RESUME_ALPHABET) for _ in range(RESUME_CODE_LENGTH))
    return "-".join(raw[i : i + 4] for i in range(0, RESUME_CODE_LENGTH, 4))


def _canonical_code(code: str) -> str:
    # what a person may type differently and still mean the same code: case, spaces, dashes,
    # and the letters Crockford's alphabet reads as digits
    text = code.upper().replace("-", "").replace(" ", "")
    return text.translate(_READ_AS_DIGIT)


def resume_digest(secret: bytes, code: str) -> str:
    """What the study stores of a resume code: HMAC-SHA256 of the code (case, spaces and dashes
    ignored) under a key derived from the study key for this purpose alone, so the database
    alone gives no code back and does not let one be tested offline."""
    key = hmac.new(secret, _RESUME_KEY_LABEL, hashlib.sha256).digest()
    return hmac.new(key, _canonical_code(code).encode(), hashlib.sha256).hexdigest()


def resume_code_matches(secret: bytes, code: str, stored: str | None) -> bool:
    """Whether ``code`` is the one whose digest is ``stored``, compared in constant time; an
    absent digest is compared too (and never matches), so the answer takes as long whether or
    not the panel id has one."""
    given = resume_digest(secret, code[:64])
    same = hmac.compare_digest(given, stored or _NO_DIGEST)
    return same and stored is not None


def security_headers(nonce: str) -> dict[str, str]:
    """No framing, no sniffing, no caching, nothing loaded from elsewhere: the only script and
    style are the page's own, carrying this response's nonce."""
    return {
        "Content-Security-Policy": (
            f"default-src 'none'; script-src 'nonce-{nonce}'; style-src 'nonce-{nonce}'; "
            "img-src 'self'; form-action 'self'; frame-ancestors 'none'; base-uri 'none'"
        ),
        "X-Frame-Options": "DENY",
        "X-Content-Type-Options": "nosniff",
        "Referrer-Policy": "no-referrer",
        "Cache-Control": "no-store",
    }
