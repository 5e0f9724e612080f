"""``practice-loop prove-policy FILE... --adopt PATCH``: the patch that puts a proven set in
force (issue 21).

The patch is one unified diff against the current commit (``git archive HEAD``), made in a
temporary copy and never applied to the working tree. For each kind the set changes it
registers the new version in the kernel as source (``COMPUTE_BUDGET_V2 = ...`` next to the
versions before it, and in the kind's registry), moves the kind's one in-force line
(``COMPUTE_BUDGET_IN_FORCE``, ``SEARCH_GATE_IN_FORCE``, ``CANDIDATE_OPERATOR_SET``) and the
search run's supported versions. A budget or gate version moves a pin of the operator set's
row, and a changed table is a new operator set (ADR-0231 §10), so when the set has no
operator file the patch also registers the next free ``candidate_operators.vN``: the set in
force with those pins moved. The golden vectors are regenerated in the copy by the copy's
own ``practice-loop vectors --write``, so the reviewer sees every identity that moves, and
the outcomes of the shipped examples (``docs/examples/expected.json``) proved again there.

Every edit is anchored on an exact source line; a missing anchor, a version that cannot be
named as a constant, or a rendered value the copy's kernel does not read back with the
proven identity is an ``AdoptError`` with its reason, never a half-written patch.
"""

from __future__ import annotations

import dataclasses
import enum
import json
import os
import re
import subprocess
import sys
import tarfile
import tempfile
import textwrap
from collections.abc import Mapping
from pathlib import Path

from ..kernel import (
    CANDIDATE_OPERATOR_SET,
    CANDIDATE_OPERATOR_SETS,
    ComputeBudgetPolicy,
    OperatorManifestRow,
    OperatorSetManifest,
    RecordError,
    SearchGatePolicy,
    operator_set_id,
)
from ..kernel.budget import BUDGET_POLICIES
from ..kernel.gate import GATE_POLICIES
from .policy_file import (
    BUDGET_POLICY_KIND,
    GATE_POLICY_KIND,
    OPERATORS_POLICY_KIND,
    kernel_gate_policy,
    kernel_operator_set,
    kernel_policy,
    next_unregistered_version,
)
from .policy_set import PolicySet

LINE_LENGTH = 100  # the project's ruff line length
_KERNEL = "src/practice_loop/kernel/"
BUDGET_MODULE = _KERNEL + "budget.py"
GATE_MODULE = _KERNEL + "gate.py"
OPERATORS_MODULE = _KERNEL + "operators.py"
SEARCH_RUN_MODULE = _KERNEL + "search_run.py"
VECTORS_DIRECTORY = "src/practice_loop/data/vectors"
EXAMPLES_DIRECTORY = "docs/examples"


class AdoptReason(enum.Enum):
    """Why a proven set could not be turned into a patch."""

    NOT_A_CHECKOUT = "not_a_checkout"  # the running package is not inside a git checkout
    ANCHOR_MISSING = "anchor_missing"  # a source line an edit is anchored on is not there once
    VERSION_NOT_NUMBERED = "version_not_numbered"  # no ``name.vN`` to name the constant after
    VERSION_ALREADY_REGISTERED = "version_already_registered"
    OPERATOR_PINS_DISAGREE = "operator_pins_disagree"  # the set's operators pin other versions
    VALUE_NOT_READ_BACK = "value_not_read_back"  # the copy's kernel does not give the proven ids
    VECTORS_NOT_WRITTEN = "vectors_not_written"  # the copy's vectors writer failed
    EXAMPLES_NOT_REWRITTEN = "examples_not_rewritten"  # the copy's example outcomes failed
    KERNEL_NOT_COMMITTED = "kernel_not_committed"  # the kernel that proved it is not HEAD's
    DIFF_FAILED = "diff_failed"


class AdoptError(Exception):
    """A proven set the patch cannot be made for, with its reason and where."""

    def __init__(self, reason: AdoptReason, where: str, detail: str) -> None:
        super().__init__(reason, where, detail)
        self.reason = reason
        self.where = where
        self.detail = detail

    def __str__(self) -> str:
        return f"{self.where}: {self.reason.value}: {self.detail}"


@dataclasses.dataclass(frozen=True, slots=True)
class Adoption:
    """What a patch puts in force: one version per kind, and the identity each must have in
    the patched kernel (``policy_id`` or ``operator_set_id``)."""

    budget: ComputeBudgetPolicy | None  # None: the budget in force stays
    gate: SearchGatePolicy | None
    operators: OperatorSetManifest | None
    operators_derived: bool  # True when the set had no operator file (pins moved here)

    def expected_ids(self) -> dict[str, str]:
        found = {}
        if self.budget is not None:
            found[self.budget.version] = self.budget.policy_id
        if self.gate is not None:
            found[self.gate.version] = self.gate.policy_id
        if self.operators is not None:
            found[self.operators.operator_set_version] = operator_set_id(self.operators)
        return found


# --------------------------------------------------------------------------------------------
# What to adopt.


def _built(value: object, kind: str) -> object:
    # A proven table always builds; a RecordError here means the proof and the kernel
    # disagree, which must not become a patch.
    if isinstance(value, RecordError):
        raise AdoptError(AdoptReason.VALUE_NOT_READ_BACK, kind, f"the kernel refuses it: {value}")
    return value


def _moved_pins(row: OperatorManifestRow, pins: Mapping[str, str]) -> OperatorManifestRow:
    moved = tuple((name, pins.get(name, pinned)) for name, pinned in row.policy_versions)
    return dataclasses.replace(row, policy_versions=moved)


def _unregistered(version: str, registry: Mapping[str, object], kind: str) -> None:
    if version in registry:
        raise AdoptError(
            AdoptReason.VERSION_ALREADY_REGISTERED,
            kind,
            f"{version} is already registered: nothing new to put in force under it",
        )


def plan_adoption(policies: PolicySet) -> Adoption:
    """The versions a proven set puts in force. The operator set's pins must name the set's
    budget and gate (they are what its operator input binds, ADR-0231 §7.2): a set without
    an operator file gets the set in force with its pins moved, under the next free version;
    an operator file pinning other versions is refused."""
    budget = gate = None
    if BUDGET_POLICY_KIND in policies.candidates:
        _unregistered(policies.budget.version, BUDGET_POLICIES, BUDGET_POLICY_KIND)
        budget = _built(kernel_policy(policies.budget), BUDGET_POLICY_KIND)
    if GATE_POLICY_KIND in policies.candidates:
        _unregistered(policies.gate.version, GATE_POLICIES, GATE_POLICY_KIND)
        gate = _built(kernel_gate_policy(policies.gate), GATE_POLICY_KIND)
    pins = {BUDGET_POLICY_KIND: policies.budget.version, GATE_POLICY_KIND: policies.gate.version}
    if OPERATORS_POLICY_KIND in policies.candidates:
        _unregistered(policies.operators.version, CANDIDATE_OPERATOR_SETS, OPERATORS_POLICY_KIND)
        operators = _built(kernel_operator_set(policies.operators), OPERATORS_POLICY_KIND)
        assert isinstance(operators, OperatorSetManifest)
        for row in operators.operators:
            for name, pinned in row.policy_versions:
                if name in pins and pinned != pins[name]:
                    raise AdoptError(
                        AdoptReason.OPERATOR_PINS_DISAGREE,
                        f"{policies.operators.source}: {row.operator_name} policy_versions",
                        f"pins {pinned}, but the set puts {pins[name]} in force",
                    )
        return Adoption(budget, gate, operators, operators_derived=False)  # type: ignore[arg-type]
    if budget is None and gate is None:
        return Adoption(None, None, None, operators_derived=False)
    derived = OperatorSetManifest(
        next_unregistered_version(OPERATORS_POLICY_KIND, CANDIDATE_OPERATOR_SETS),
        tuple(_moved_pins(row, pins) for row in CANDIDATE_OPERATOR_SET.operators),
    )
    return Adoption(budget, gate, derived, operators_derived=True)  # type: ignore[arg-type]


# --------------------------------------------------------------------------------------------
# Source text: values rendered as Python, edits anchored on exact lines.


def _inline(value: object) -> str:
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        shown = ", ".join(
            f"{field.name}={_inline(getattr(value, field.name))}"
            for field in dataclasses.fields(value)
            if field.init
        )
        return f"{type(value).__name__}({shown})"
    if isinstance(value, enum.Enum):
        return f"{type(value).__name__}.{value.name}"
    if isinstance(value, tuple):
        items = [_inline(item) for item in value]
        return "(" + ", ".join(items) + ("," if len(items) == 1 else "") + ")"
    if isinstance(value, (str, int)) and not isinstance(value, bool):
        return json.dumps(value) if isinstance(value, str) else repr(value)
    raise TypeError(f"cannot render {type(value).__name__} as source")


def render_value(value: object, indent: int = 0, prefix: str = "") -> str:
    """``value`` as a Python expression the kernel module can evaluate (its classes and
    enums are in scope there), one item a line with trailing commas where a line would be
    longer than ``LINE_LENGTH``: the form ``ruff format`` keeps."""
    inline = _inline(value)
    if indent + len(prefix) + len(inline) + 1 <= LINE_LENGTH:
        return inline
    inner = " " * (indent + 4)
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        lines = [
            f"{inner}{field.name}="
            + render_value(getattr(value, field.name), indent + 4, f"{field.name}=")
            + ","
            for field in dataclasses.fields(value)
            if field.init
        ]
        opener = f"{type(value).__name__}("
    elif isinstance(value, tuple):
        lines = [f"{inner}{render_value(item, indent + 4)}," for item in value]
        opener = "("
    else:  # a long string or number: nothing to break
        return inline
    return opener + "\n" + "\n".join(lines) + "\n" + " " * indent + ")"


def _constant_name(prefix: str, version: str) -> str:
    found = re.fullmatch(r"[a-z_]+\.v(\d+)", version)
    if found is None:
        raise AdoptError(
            AdoptReason.VERSION_NOT_NUMBERED,
            version,
            f"a version adopted as source is named NAME.vN, so that its constant is {prefix}_VN",
        )
    return f"{prefix}_V{found.group(1)}"


def _missing(where: str, anchor: str, count: int) -> AdoptError:
    return AdoptError(
        AdoptReason.ANCHOR_MISSING,
        where,
        f"expected the line {anchor.strip()!r} exactly once, found it {count} times",
    )


def insert_before_line(text: str, anchor: str, insertion: str, where: str) -> str:
    """``insertion`` placed before the one line equal to ``anchor``."""
    lines = text.splitlines(keepends=True)
    found = [index for index, line in enumerate(lines) if line.rstrip("\n") == anchor]
    if len(found) != 1:
        raise _missing(where, anchor, len(found))
    return "".join(lines[: found[0]]) + insertion + "".join(lines[found[0] :])


def insert_before_closer(text: str, opener: str, closer: str, insertion: str, where: str) -> str:
    """``insertion`` placed before the first line equal to ``closer`` after the one line
    equal to ``opener``: the last entry of a registry or tuple written one entry a line."""
    lines = text.splitlines(keepends=True)
    found = [index for index, line in enumerate(lines) if line.rstrip("\n") == opener]
    if len(found) != 1:
        raise _missing(where, opener, len(found))
    for index in range(found[0] + 1, len(lines)):
        if lines[index].rstrip("\n") == closer:
            return "".join(lines[:index]) + insertion + "".join(lines[index:])
    raise _missing(where, closer, 0)


def replace_assignment(text: str, name: str, value: str, where: str) -> str:
    """The one line ``NAME = CONSTANT`` made ``NAME = value``."""
    pattern = re.compile(rf"^{re.escape(name)} = [A-Z][A-Z0-9_]*$", re.MULTILINE)
    found = pattern.findall(text)
    if len(found) != 1:
        raise _missing(where, f"{name} = ...", len(found))
    return pattern.sub(f"{name} = {value}", text)


def _refuse_registered(text: str, name: str, version: str, where: str) -> None:
    # The registries are checked when the adoption is planned; this guards the constant's
    # name in the source the patch is made against.
    if re.search(rf"^{re.escape(name)} = ", text, re.MULTILINE):
        raise AdoptError(
            AdoptReason.VERSION_ALREADY_REGISTERED,
            where,
            f"{version} ({name}) is already in the kernel: a new table needs a new version",
        )


@dataclasses.dataclass(frozen=True, slots=True)
class _KindEdits:
    """Where one kind's version is written, registered and put in force."""

    module: str
    prefix: str  # the constants' prefix: COMPUTE_BUDGET_V2
    constructor: str  # what the constant is an instance of
    before: str  # the line the new constant goes above
    registry: str  # the registry's opening line; entries end at the line "    }"
    in_force: str  # the one in-force assignment
    supported: str | None  # the search run's supported-versions tuple, if any


BUDGET_EDITS = _KindEdits(
    BUDGET_MODULE,
    "COMPUTE_BUDGET",
    "ComputeBudgetPolicy",
    "# The versions this kernel knows; a policy is honoured only when it is the registered value.",
    "BUDGET_POLICIES: Mapping[str, ComputeBudgetPolicy] = types.MappingProxyType(",
    "COMPUTE_BUDGET_IN_FORCE",
    "SUPPORTED_BUDGET_POLICY_VERSIONS = (",
)
GATE_EDITS = _KindEdits(
    GATE_MODULE,
    "SEARCH_GATE",
    "SearchGatePolicy",
    "# The versions this kernel knows; a policy is honoured only when it is the registered value,",
    "GATE_POLICIES: Mapping[str, SearchGatePolicy] = types.MappingProxyType(",
    "SEARCH_GATE_IN_FORCE",
    None,  # a gate version is supported wherever it is registered (gate._registered_version)
)
OPERATORS_EDITS = _KindEdits(
    OPERATORS_MODULE,
    "CANDIDATE_OPERATOR_SET",
    "OperatorSetManifest",
    "# The candidate operator sets this kernel registers, besides the search run's empty set",
    "CANDIDATE_OPERATOR_SETS: Mapping[str, OperatorSetManifest] = types.MappingProxyType(",
    "CANDIDATE_OPERATOR_SET",
    "SUPPORTED_OPERATOR_SET_VERSIONS = (",
)


def _adopt_one(
    sources: dict[str, str], edits: _KindEdits, value: object, version: str, comment: str
) -> None:
    text = sources[edits.module]
    name = _constant_name(edits.prefix, version)
    _refuse_registered(text, name, version, edits.module)
    rendered = render_value(value, 0, f"{name} = ")
    wrapped = textwrap.wrap(comment, LINE_LENGTH - 2, break_on_hyphens=False)
    block = "".join(f"# {line}\n" for line in wrapped) + f"{name} = {rendered}\n\n"
    text = insert_before_line(text, edits.before, block, edits.module)
    entry = f"        {name}.{_version_field(value)}: {name},\n"
    text = insert_before_closer(text, edits.registry, "    }", entry, edits.module)
    sources[edits.module] = replace_assignment(text, edits.in_force, name, edits.module)
    if edits.supported is not None:
        sources[SEARCH_RUN_MODULE] = insert_before_closer(
            sources[SEARCH_RUN_MODULE],
            edits.supported,
            ")",
            f'    "{version}",\n',
            SEARCH_RUN_MODULE,
        )


def _version_field(value: object) -> str:
    return "operator_set_version" if isinstance(value, OperatorSetManifest) else "version"


def adopted_sources(sources: Mapping[str, str], adoption: Adoption) -> dict[str, str]:
    """The kernel modules (``path -> text``) with ``adoption`` written in; pure text work,
    so that a refusal leaves nothing behind."""
    edited = dict(sources)
    if adoption.budget is not None:
        version = adoption.budget.version
        comment = f"{version}, adopted from a proven policy file (practice-loop prove-policy)."
        _adopt_one(edited, BUDGET_EDITS, adoption.budget, version, comment)
    if adoption.gate is not None:
        version = adoption.gate.version
        comment = f"{version}, adopted from a proven policy file (practice-loop prove-policy)."
        _adopt_one(edited, GATE_EDITS, adoption.gate, version, comment)
    if adoption.operators is not None:
        version = adoption.operators.operator_set_version
        comment = (
            f"{version}: the set in force with its pins moved to the adopted versions (a changed"
            " table is a new set, ADR-0231 §10)."
            if adoption.operators_derived
            else f"{version}, adopted from a proven policy file (practice-loop prove-policy)."
        )
        _adopt_one(edited, OPERATORS_EDITS, adoption.operators, version, comment)
    return edited


# --------------------------------------------------------------------------------------------
# The copy, the vectors, the diff.


def checkout_root() -> Path:
    """The git checkout the running package belongs to: the patch must match the kernel
    that proved the set."""
    package = Path(__file__).resolve().parents[1]
    try:
        shown = subprocess.run(
            ["git", "-C", str(package), "rev-parse", "--show-toplevel"],
            capture_output=True,
            text=True,
            check=True,
        ).stdout.strip()
    except (OSError, subprocess.CalledProcessError) as error:
        raise AdoptError(
            AdoptReason.NOT_A_CHECKOUT, str(package), f"not inside a git checkout ({error})"
        ) from None
    root = Path(shown)
    if not (root / BUDGET_MODULE).is_file():
        raise AdoptError(AdoptReason.NOT_A_CHECKOUT, str(root), "not a practice-loop checkout")
    return root


def _git(cwd: Path, *args: str) -> subprocess.CompletedProcess[bytes]:
    # Settings of the user's own config that would change the diff's form are pinned.
    settings = (
        "-c", "core.autocrlf=false", "-c", "diff.noprefix=false", "-c", "diff.mnemonicPrefix=false",
        "-c", "user.name=practice-loop", "-c", "user.email=adopt@localhost",
        "-c", "commit.gpgsign=false", "-c", "core.hooksPath=/dev/null",
    )  # fmt: skip
    return subprocess.run(["git", *settings, *args], cwd=cwd, capture_output=True, check=False)


def _export_head(root: Path, copy: Path) -> None:
    archive = copy.parent / "head.tar"
    made = subprocess.run(
        ["git", "-C", str(root), "archive", "--format=tar", "-o", str(archive), "HEAD"],
        capture_output=True,
        text=True,
        check=False,
    )
    if made.returncode != 0:
        raise AdoptError(AdoptReason.NOT_A_CHECKOUT, str(root), made.stderr.strip())
    with tarfile.open(archive) as tar:
        tar.extractall(copy, filter="tar")
    archive.unlink()


def _require_committed_kernel(root: Path, copy: Path) -> None:
    """The set was proved (and its derived pins read) on the working tree's kernel, but the
    patch is made against HEAD: the two must be the same, or the patch would put in force
    what nobody proved."""
    kernel = Path(_KERNEL)
    for path in sorted((root / kernel).glob("*.py")):
        committed = copy / kernel / path.name
        if not committed.is_file() or committed.read_bytes() != path.read_bytes():
            raise AdoptError(
                AdoptReason.KERNEL_NOT_COMMITTED,
                str(kernel / path.name),
                "differs from HEAD: commit or stash the kernel first (the patch is made"
                " against HEAD)",
            )


def _run_in_copy(copy: Path, code: str) -> subprocess.CompletedProcess[str]:
    environment = {
        **os.environ,
        "PYTHONPATH": os.pathsep.join([str(copy / "src"), str(copy / "strategies")]),
        "PYTHONDONTWRITEBYTECODE": "1",
    }
    return subprocess.run(
        [sys.executable, "-c", code],
        cwd=copy,
        env=environment,
        capture_output=True,
        text=True,
        check=False,
    )


_READ_BACK = """
import json
from practice_loop import kernel
from practice_loop.kernel import budget, gate, operators
found = {v: p.policy_id for v, p in budget.BUDGET_POLICIES.items()}
found.update({v: p.policy_id for v, p in gate.GATE_POLICIES.items()})
found.update({v: kernel.operator_set_id(m) for v, m in operators.CANDIDATE_OPERATOR_SETS.items()})
in_force = [
    budget.COMPUTE_BUDGET_IN_FORCE.version,
    gate.SEARCH_GATE_IN_FORCE.version,
    operators.CANDIDATE_OPERATOR_SET.operator_set_version,
]
print(json.dumps({"registered": found, "in_force": in_force}))
"""

_WRITE_VECTORS = """
from practice_loop.harness.vectors import write_vectors
write_vectors()
"""

# The examples' outcomes depend on what is registered (a shipped example may now name a
# taken version): the patch moves them too, so the reviewer sees each one that changes.
_REWRITE_EXAMPLE_OUTCOMES = f"""
from pathlib import Path
from practice_loop.harness.policy_examples import rewrite_outcomes
rewrite_outcomes(Path({EXAMPLES_DIRECTORY!r}))
"""


def _read_back(copy: Path, adoption: Adoption) -> None:
    """The patched kernel, imported in a fresh interpreter, registers and puts in force each
    adopted version with exactly the identity that was proven."""
    ran = _run_in_copy(copy, _READ_BACK)
    if ran.returncode != 0:
        raise AdoptError(AdoptReason.VALUE_NOT_READ_BACK, "kernel", ran.stderr.strip()[-2000:])
    shown = json.loads(ran.stdout)
    for version, expected in adoption.expected_ids().items():
        if shown["registered"].get(version) != expected:
            raise AdoptError(
                AdoptReason.VALUE_NOT_READ_BACK,
                version,
                f"the patched kernel registers {shown['registered'].get(version)}, not the"
                f" proven {expected}",
            )
        if version not in shown["in_force"]:
            raise AdoptError(
                AdoptReason.VALUE_NOT_READ_BACK,
                version,
                "the patched kernel does not put it in force",
            )


def build_patch(adoption: Adoption, root: Path | None = None) -> str:
    """The unified diff that puts ``adoption`` in force, against ``root``'s HEAD."""
    root = checkout_root() if root is None else root
    with tempfile.TemporaryDirectory(prefix="practice-loop-adopt-") as scratch:
        copy = Path(scratch) / "tree"
        copy.mkdir()
        _export_head(root, copy)
        _require_committed_kernel(root, copy)
        for args in (("init", "-q"), ("add", "-A"), ("commit", "-q", "-m", "HEAD")):
            done = _git(copy, *args)
            if done.returncode != 0:
                raise AdoptError(AdoptReason.DIFF_FAILED, " ".join(args), done.stderr.decode())
        modules = (BUDGET_MODULE, GATE_MODULE, OPERATORS_MODULE, SEARCH_RUN_MODULE)
        sources = {path: (copy / path).read_text("utf-8") for path in modules}
        for path, text in adopted_sources(sources, adoption).items():
            if text != sources[path]:
                (copy / path).write_text(text, "utf-8")
        _read_back(copy, adoption)
        written = _run_in_copy(copy, _WRITE_VECTORS)
        if written.returncode != 0:
            raise AdoptError(
                AdoptReason.VECTORS_NOT_WRITTEN, VECTORS_DIRECTORY, written.stderr.strip()[-2000:]
            )
        rewritten = _run_in_copy(copy, _REWRITE_EXAMPLE_OUTCOMES)
        if rewritten.returncode != 0:
            raise AdoptError(
                AdoptReason.EXAMPLES_NOT_REWRITTEN,
                EXAMPLES_DIRECTORY,
                rewritten.stderr.strip()[-2000:],
            )
        _git(copy, "add", "-A")
        diff = _git(copy, "diff", "--cached", "--binary", "--no-color", "--no-ext-diff", "HEAD")
        if diff.returncode != 0:
            raise AdoptError(AdoptReason.DIFF_FAILED, "git diff", diff.stderr.decode())
        return diff.stdout.decode("utf-8")


def write_atomically(path: Path, text: str) -> None:
    """``text`` at ``path`` whole or not at all: a temporary file beside it, renamed."""
    handle, temporary = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".tmp")
    try:
        with os.fdopen(handle, "w", encoding="utf-8", newline="") as stream:
            stream.write(text)
        os.replace(temporary, path)
    except BaseException:
        Path(temporary).unlink(missing_ok=True)
        raise


def patch_path_problem(path: Path) -> str | None:
    """Why ``path`` cannot take the patch, checked before anything is proved; None when it
    can."""
    parent = path.parent if str(path.parent) else Path(".")
    if path.is_dir():
        return f"{path} is a directory"
    if not parent.is_dir():
        return f"{parent} is not a directory"
    if not os.access(parent, os.W_OK | os.X_OK):
        return f"{parent} is not writable"
    if path.exists() and not os.access(path, os.W_OK):
        return f"{path} is not writable"
    return None
