"""Stage 11 — retrieval as a tool: the agent searches the workspace for short passages to cite, when it needs to.

Adds: ``tokenize``, ``chunk`` (overlapping runs of whole lines), ``BM25`` (scoring as rank-bm25's ``BM25Okapi``),
``Index`` (the workspace's text files, found inside it as read_file finds them; binary, huge or non-UTF-8 ones are
skipped, saying why) and the tool ``search_workspace``.

Leaves out: embeddings (BM25 matches words: a Korean question does not find an English answer), a Korean
morphological analyser, stemming and stop words, keeping the index between calls, and non-UTF-8 formats.
"""
from __future__ import annotations

import math
import os
import re
import stat
import unicodedata
from collections import Counter
from dataclasses import dataclass
from pathlib import Path

from .workspace import OPEN_FILE, OS_FAILURES, ToolError, inside_workspace, os_problem

_HANGUL = "\uac00-\ud7a3"   # the 11,172 ready-made Hangul syllables, 가 to 힣
_RUNS = re.compile(rf"[{_HANGUL}]+|[^\W{_HANGUL}]+")   # a run of Hangul, or of other letters, digits and _
MAX_FILES, MAX_FILE_BYTES = 200, 100_000   # a workspace of notes, not a disk: more needs a real search engine
MAX_QUERY_CHARS, MAX_K, MAX_LINE_CHARS, MAX_OUTPUT_CHARS = 300, 10, 200, 4000


def tokenize(text: str) -> list[str]:
    """Lower-cased words (letters, digits, _), but a run of Hangul becomes its overlapping two-syllable pieces:
    ``tokenize("출장비 규정, Q3!")`` is ``['출장', '장비', '규정', 'q3']``. Korean writes particles onto words
    (회의 + 는 = 회의는), so whole words rarely match while pairs do, at the price of accidents (장비 in 출장비)."""
    tokens: list[str] = []
    for run in _RUNS.findall(unicodedata.normalize("NFC", text).casefold()):   # NFC: ㅎ+ㅚ typed apart is 회
        if len(run) > 1 and "\uac00" <= run[0] <= "\ud7a3":
            tokens.extend(run[i:i + 2] for i in range(len(run) - 1))
        else:
            tokens.append(run)
    return tokens


@dataclass
class Chunk:
    path: str         # relative to the workspace, as read_file takes it
    start_line: int   # 1-based, and both ends included
    end_line: int
    text: str


def chunk(text: str, path: str, lines: int = 4, overlap: int = 1) -> list[Chunk]:
    """Non-blank runs of ``lines`` whole lines, overlapping so that a passage cut by one boundary is whole in one."""
    if type(lines) is not int or type(overlap) is not int or lines < 1 or not 0 <= overlap < lines:
        raise ValueError("chunk needs whole numbers with lines >= 1 and 0 <= overlap < lines")
    rows = [row.removesuffix("\r") for row in text.split("\n")]   # as editors count: splitlines breaks at \x0c too
    rows, chunks = rows[:-1] if rows[-1] == "" else rows, []   # a final "\n" ends the last line, starts none
    for start in range(0, len(rows), lines - overlap):
        part = rows[start:start + lines]
        if any(row.strip() for row in part):
            chunks.append(Chunk(path, start + 1, start + len(part), "\n".join(part)))
        if start + lines >= len(rows):   # this run reached the end: another would only repeat its tail
            break
    return chunks


class BM25:
    """Okapi BM25, scoring as rank-bm25's ``BM25Okapi`` (0.2). A word in n of N documents has idf ln(N - n + 0.5)
    - ln(n + 0.5), or epsilon × the average idf where that is negative. A document of dl tokens gains, per query
    word found f times, idf · f·(k1 + 1) / (f + k1·(1 - b + b·dl/avgdl)): extra matches help less, long ones less."""
    def __init__(self, documents, k1: float = 1.5, b: float = 0.75, epsilon: float = 0.25):
        if isinstance(documents, str) or any(isinstance(d, str) for d in documents):
            raise TypeError("BM25 takes Chunks or lists of tokens (tokenize(text)), not plain strings")
        docs = [tokenize(d.text) if isinstance(d, Chunk) else list(d) for d in documents]
        self.k1, self.b, self.lengths = k1, b, [len(d) for d in docs]
        self.avgdl = sum(self.lengths) / len(docs) if docs else 0.0
        self.postings: dict[str, list[tuple[int, int]]] = {}   # word → [(document number, count in it)]
        for i, doc in enumerate(docs):
            for word, count in Counter(doc).items():
                self.postings.setdefault(word, []).append((i, count))
        raw = {w: math.log(len(docs) - len(p) + 0.5) - math.log(len(p) + 0.5) for w, p in self.postings.items()}
        floor = epsilon * sum(raw.values()) / len(raw) if raw else 0.0
        self.idf = {w: floor if idf < 0 else idf for w, idf in raw.items()}

    def scores(self, query_tokens: list[str]) -> list[float]:
        """One score per document, in order; a document sharing no word with the query scores 0."""
        scores, k1, b = [0.0] * len(self.lengths), self.k1, self.b
        for word in query_tokens:
            for i, f in self.postings.get(word, ()):   # only the documents holding the word: the rest add 0
                scores[i] += self.idf[word] * (f * (k1 + 1) / (f + k1 * (1 - b + b * self.lengths[i] / self.avgdl)))
        return scores


@dataclass
class Hit:
    path: str
    start_line: int   # the first and the last line of the chunk that hold a query word
    end_line: int
    score: float
    snippet: str      # those lines

    @property
    def citation(self) -> str:
        return f"{self.path}:{self.start_line}" + (f"-{self.end_line}" if self.end_line != self.start_line else "")


def _files(folder: str):
    """Workspace paths of the files under ``folder``, in name order, without hidden ones or symlinked folders."""
    start, root = inside_workspace(folder), Path.cwd().resolve()
    if not start.is_dir():
        raise ToolError(f"there is no folder '{folder}' in the workspace; call list_files to see what exists")
    for here, folders, files in os.walk(start):
        folders[:] = sorted(name for name in folders if not name.startswith("."))
        yield from (Path(here, name).relative_to(root).as_posix() for name in sorted(files) if name[0] != ".")


def _read_text(path: str, max_bytes: int) -> str:
    """The file's text, or a ToolError saying why it is left out."""
    target = inside_workspace(path)   # read_file's rule: a symlink leading outside the workspace is refused
    try:   # opened as read_file opens it: a named pipe is refused below instead of waiting for a writer
        with open(os.open(target, OPEN_FILE), "rb") as f:
            if not stat.S_ISREG(os.fstat(f.fileno()).st_mode):
                raise ToolError("not a regular file")
            data = f.read(max_bytes + 1)
    except OS_FAILURES as e:
        raise os_problem(path, e) from None
    if len(data) > max_bytes or b"\0" in data:
        raise ToolError(f"larger than {max_bytes:,} bytes" if len(data) > max_bytes else "binary (NUL bytes)")
    try:
        return data.decode("utf-8-sig")
    except UnicodeDecodeError:
        raise ToolError("not UTF-8 text") from None


class Index:
    """Chunks of text files ranked by BM25; ``skipped`` lists (path, why) for each file left out."""
    def __init__(self, chunks: list[Chunk], skipped: list[tuple[str, str]] | None = None):
        self.chunks, self.skipped = list(chunks), list(skipped or [])
        self.bm25 = BM25(self.chunks)

    @classmethod
    def from_workspace(cls, folder: str = ".", *, lines: int = 4, overlap: int = 1,
                       max_files: int = MAX_FILES, max_bytes: int = MAX_FILE_BYTES) -> Index:
        """Index the first ``max_files`` files under ``folder`` of at most ``max_bytes`` each; others are skipped."""
        chunks, skipped = [], []
        for n, path in enumerate(_files(folder)):
            if n == max_files:
                skipped.append((path, f"over the limit of {max_files} files; it and any after it are left out"))
                break
            try:
                chunks += chunk(_read_text(path, max_bytes), path, lines, overlap)
            except ToolError as e:
                skipped.append((path, str(e)))
        return cls(chunks, skipped)

    def search(self, query: str, k: int = 3) -> list[Hit]:
        """The ``k`` best chunks holding a query word with idf above 0 ("the" tells nothing), or any query word if
        none has, each cut to the lines holding one. A line already cited (chunks overlap) is not cited again."""
        if type(k) is not int or k < 1:
            raise ValueError("k must be a whole number, at least 1")
        words = tokenize(query)
        wanted = {w for w in words if self.bm25.idf.get(w, 0) > 0} or set(words)
        scores, matched = self.bm25.scores(words), {i for w in wanted for i, _ in self.bm25.postings.get(w, ())}
        hits: list[Hit] = []
        for i in sorted(matched, key=lambda i: (-scores[i], i)):
            c, rows = self.chunks[i], self.chunks[i].text.split("\n")
            cited = {n for h in hits if h.path == c.path for n in range(h.start_line, h.end_line + 1)}
            marked = [n for n, row in enumerate(rows) if c.start_line + n not in cited and wanted & set(tokenize(row))]
            span = range(c.start_line + marked[0], c.start_line + marked[-1] + 1) if marked else ()
            if span and not cited.intersection(span):   # the new lines, if they are a run
                hits.append(Hit(c.path, span[0], span[-1], scores[i], "\n".join(rows[marked[0]:marked[-1] + 1])))
            if len(hits) == k:   # the rest are never looked at: a common word can match thousands of chunks
                break
        return hits

    def __repr__(self) -> str:
        files = len({c.path for c in self.chunks})
        return f"Index({len(self.chunks)} chunks from {files} files, {len(self.skipped)} skipped)"


def _shown(text: str) -> str:   # a control character or half an emoji cannot fake a line or break the output
    text = "".join(c if c.isprintable() else " " for c in text)
    return text if len(text) <= MAX_LINE_CHARS else text[:MAX_LINE_CHARS] + "…"


def search_workspace(query: str, k: int = 3) -> str:
    """Find passages in the workspace's text files that match a question, cited as file:line; then read_file.

    Use it when you do not know which file holds the answer, or a file is too long to read whole. To read a
    file you already know, use read_file; for one known fact such as a price, use lookup; for the company
    documents outside the workspace, use search_docs. It matches words, not meanings: ask in the language
    of the documents, with the words they would use.

    Args:
        query: a question or a few key words, in English or Korean, e.g. "travel allowance" or "다음 회의".
        k: how many passages to return, 1 to 10.
    """
    if not isinstance(query, str) or not query.strip():
        raise ToolError('query must be a question or a few words, e.g. "travel allowance" or "다음 회의"')
    if len(query) > MAX_QUERY_CHARS:
        raise ToolError(f"the query is {len(query):,} characters long; send at most {MAX_QUERY_CHARS}: the key "
                        "words are enough")
    if type(k) is not int or not 1 <= k <= MAX_K:
        raise ToolError(f"k must be a whole number from 1 to {MAX_K}")
    if not tokenize(query):
        raise ToolError('the query has no words (letters or digits) to search for, e.g. "unit price" or "단가"')
    if not (index := Index.from_workspace()).chunks:
        return "The workspace has no text files to search; call list_files to see what is there."
    if not (hits := index.search(query, k)):
        return ("No passage in the workspace matches the query's words; try other words, the documents' "
                "language, or list_files and read_file.")
    text = "\n".join(f"{_shown(h.citation)} (score {h.score:.2f}): "
                     + "\n    ".join(map(_shown, h.snippet.split("\n"))) for h in hits)
    return text if len(text) <= MAX_OUTPUT_CHARS else text[:MAX_OUTPUT_CHARS] + "\n[... cut; ask for fewer passages]"
