"""The product: what ``practice-loop run``, ``verify`` and ``show`` are made of, and what
Workbench reads through.

- ``reader``: GSM8K-style question text to a ``ProblemFrame`` (docs/adr/0005);
- ``runner``: JSON lines as data, typed skips, unjudged gold answers (docs/adr/0012);
- ``store``: the SQLite trace store, opened and never conjured, every problem typed;
- ``verification``: the full check behind ``verify``, ``show`` and Workbench;
- ``verdict``: what a trace comes to and the path it took, heading ``show`` and every
  Workbench trace page;
- ``render``: one stored trace as text for ``show``;
- ``progress``: the progress line of long commands.

Its users are the command line (``practice_loop.cli``), Workbench (``practice_loop.workbench``),
the harness and the tests. It imports only the kernel's façade and its own modules, never
Workbench, the command line, the harness or a test tool (``tests/architecture/
test_shell_imports.py``).
"""
