"""Stage 10 — long-term memory: notes that outlive a conversation, in a SQLite file the agent reaches by tools.

Adds: ``MemoryStore``: ``remember`` / ``recall`` / ``forget`` as tools (FTS5 or ``LIKE``; no secrets; forget erases).

Leaves out: embeddings and vector search (recall matches words), and writers at once: each waits for the last.
"""
from __future__ import annotations

import re
import sqlite3
import unicodedata
from contextlib import closing, contextmanager, suppress

from .models.base import scrub
from .workspace import ToolError, inside_workspace

MAX_NOTE_CHARS, MAX_NOTES, MAX_RESULTS, MAX_QUERY_CHARS, MAX_QUERY_WORDS = 1000, 10_000, 10, 200, 10   # one fact a note
# A provider's key prefix after anything but a Latin letter or digit (no \b parts Korean and Latin: "키는sk-..."),
_KEY_PREFIX = re.compile(r"(?<![A-Za-z0-9])(?:sk-|gh[pousr]_|xox[abp]-|AKIA)[A-Za-z0-9_-]{12,}")
_LONG_RUN = re.compile(r"[A-Za-z0-9+/_=-]{32,}")   # or a long run mixing upper case, lower case and digits (base64)


def looks_like_secret(text: str) -> bool:
    """Whether ``text`` holds something shaped like an API key or another secret, even one wrapped over lines."""
    unwrapped = "".join(line.strip() for line in text.splitlines())   # a wrapped key made whole (each run too)
    mixed = any(all(re.search(c, run) for c in ("[a-z]", "[A-Z]", "[0-9]")) for run in _LONG_RUN.findall(unwrapped))
    return mixed or any(_KEY_PREFIX.search(t) for t in (text, unwrapped))


def fts5_available() -> bool:
    """Whether this Python's SQLite has FTS5, its full-text search (most builds do)."""
    with closing(sqlite3.connect(":memory:")) as db, suppress(sqlite3.OperationalError):   # "no such module: fts5"
        db.execute("CREATE VIRTUAL TABLE probe USING fts5(text)")
        return True
    return False


class MemoryStore:
    """Notes in a workspace SQLite file; ``fts=None``: FTS5 where SQLite has it (best match first), False: ``LIKE``."""

    def __init__(self, path: str = "memory.sqlite3", *, fts: bool | None = None):
        self.path = inside_workspace(path)
        if fts and not fts5_available():
            raise ValueError("this Python's SQLite has no FTS5; use fts=None or fts=False for the LIKE search")
        self.fts = fts5_available() if fts is None else bool(fts)
        with self._db() as db:   # AUTOINCREMENT: a forgotten #5 never comes back as another #5
            db.execute("CREATE TABLE IF NOT EXISTS memories (id INTEGER PRIMARY KEY AUTOINCREMENT, text TEXT NOT NULL)")
            if self.fts:   # the index is rebuilt from the table, so notes saved without FTS5 are found too
                db.execute("CREATE VIRTUAL TABLE IF NOT EXISTS memories_fts USING fts5(text)")
                db.execute("DELETE FROM memories_fts")
                db.execute("INSERT INTO memories_fts(rowid, text) SELECT id, text FROM memories")

    @contextmanager
    def _db(self):   # one operation, one transaction holding the write lock from its first read (no racing twins)
        try:   # then committed (or rolled back) and closed; what it deletes is overwritten, not left in the file
            with closing(sqlite3.connect(self.path)) as db, db:
                db.executescript("PRAGMA secure_delete = ON; BEGIN IMMEDIATE")
                yield db
        except sqlite3.Error as e:
            raise ToolError(f"the memory file '{self.path.name}' could not be used ({type(e).__name__}: {e}); "
                            "check that it is a SQLite database nobody else is writing") from None

    def tools(self) -> dict:   # name → method: Agent({**default_tools(), **store.tools()}, model)
        return {"remember": self.remember, "recall": self.recall, "forget": self.forget}

    def remember(self, text: str) -> str:
        """Save one fact worth keeping for later conversations (a preference, a decision, a name); never a secret.

        Args:
            text: the fact in a sentence or two, e.g. "The user lives in Busan (부산에 산다)".
        """
        if not isinstance(text, str) or not text.strip():
            raise ToolError('text must be a non-empty sentence, e.g. "The user prefers answers in Korean"')
        raw = scrub(text)   # one line, in one Unicode form (NFC): a note cannot fake extra lines in recall's answer,
        text = unicodedata.normalize("NFC", " ".join(raw.split()))   # and is found however the query is written
        if len(text) > MAX_NOTE_CHARS:
            raise ToolError(f"the note is {len(text):,} characters long; the limit is {MAX_NOTE_CHARS:,}: save "
                            "one short fact at a time")
        if any(ord(c) < 32 or ord(c) == 127 for c in text):
            raise ToolError("the note contains control characters; save plain text")
        if looks_like_secret(raw):   # before the lines are joined: a key may be wrapped; the message never repeats it
            raise ToolError("this looks like an API key or another secret (a key prefix such as sk-, or a long run "
                            "of mixed letters and digits); secrets are never saved in memory. Save where it is "
                            "kept instead, e.g. \"the OpenAI key is in the OPENAI_API_KEY variable\".")
        with self._db() as db:
            if found := db.execute("SELECT id FROM memories WHERE text = ?", (text,)).fetchone():
                return f"Already remembered as #{found[0]}."
            if db.execute("SELECT count(*) FROM memories").fetchone()[0] >= MAX_NOTES:
                raise ToolError(f"the memory is full ({MAX_NOTES:,} notes); forget some before saving more")
            new = db.execute("INSERT INTO memories (text) VALUES (?)", (text,)).lastrowid
            if self.fts:
                db.execute("INSERT INTO memories_fts (rowid, text) VALUES (?, ?)", (new, text))
        return f"Remembered as #{new}."

    def recall(self, query: str, limit: int = 5) -> str:
        """Search saved memories by words (e.g. 부산, price); use it before asking something the user may have said.

        Args:
            query: words to look for; a memory matches if it has any of them.
            limit: the most memories to return, 1 to 10.
        """
        if not isinstance(query, str) or len(query) > MAX_QUERY_CHARS:
            raise ToolError(f"query must be a few words, at most {MAX_QUERY_CHARS} characters")
        words = re.findall(r"\w+", unicodedata.normalize("NFC", scrub(query)))[:MAX_QUERY_WORDS]   # NFC, as notes are
        if not words:
            raise ToolError('query has no words to look for; send one or more words, e.g. "부산" or "price"')
        if type(limit) is not int or not 1 <= limit <= MAX_RESULTS:
            raise ToolError(f"limit must be a whole number from 1 to {MAX_RESULTS}")
        with self._db() as db:
            if self.fts:   # \w+ words, each quoted: FTS5 sees no search syntax; * matches words that start with it
                rows = db.execute("SELECT rowid, text FROM memories_fts WHERE memories_fts MATCH ? ORDER BY rank "
                                  "LIMIT ?", (" OR ".join(f'"{w}"*' for w in words), limit)).fetchall()
            else:   # the SQL holds only ? placeholders; the words travel as parameters, never as SQL
                hits = " + ".join(["(text LIKE ? ESCAPE '\\')"] * len(words))
                patterns = ["%" + re.sub(r"([\\%_])", r"\\\1", w) + "%" for w in words]
                rows = db.execute(f"SELECT id, text FROM memories WHERE {hits} > 0 ORDER BY {hits} DESC, id DESC "
                                  "LIMIT ?", [*patterns, *patterns, limit]).fetchall()
        return "\n".join(f"#{number}: {text}" for number, text in rows) or f"No memory matches '{' '.join(words)}'."

    def forget(self, memory_id: int) -> str:
        """Delete one saved memory by its number from recall, e.g. when the user says it is wrong or asks you to.

        Args:
            memory_id: the number recall shows, e.g. 3 for "#3".
        """
        if type(memory_id) is not int:
            raise ToolError('memory_id must be a whole number, e.g. 3 for the "#3" that recall shows')
        with self._db() as db:
            row = db.execute("DELETE FROM memories WHERE id = ? RETURNING text", [str(memory_id)]).fetchone()
            if not row:   # the id as text, of any size: one SQLite cannot hold matches no note
                raise ToolError(f"there is no memory #{memory_id}; use recall to find the number of the one to forget")
            if self.fts:   # and merged out of the index, whose old segments would keep its words
                db.execute("DELETE FROM memories_fts WHERE rowid = ?", (memory_id,))
                db.execute("INSERT INTO memories_fts (memories_fts) VALUES ('optimize')")
        return f"Forgot #{memory_id}: {row[0][:80]}"

    def __repr__(self) -> str:
        with self._db() as db:
            count = db.execute("SELECT count(*) FROM memories").fetchone()[0]
        return f"MemoryStore({self.path.name!r}, {count} notes, search={'FTS5' if self.fts else 'LIKE'})"
