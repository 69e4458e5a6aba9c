"""Which modules a module's project view needs: its scope, found name by name from the
modules' outlines (project/outline.py: Python's `ast`, no summary), so that a module is read
and summarised only when an answer may need one of its names.

A module's answers come from two directions:

- **forward**, what it uses: each import name it may run is followed to the module that
  defines it, through the re-exports on the way (a package's `__init__` binding the name with
  an import, or listing it in a `_LazyModule` import structure), name by name: `from diffusers
  import UNet2DConditionModel` reads `diffusers/__init__.py`'s outline, follows that one name to
  its submodule, and to no other. The modules passed through are *hops*: their summaries are
  read (the view resolves the name through them), what they import is not followed. A module
  that defines a name it is asked for is *used*: its own imports are followed in turn.
- **backward**, who may call it: the modules that use it, and those that use them (a caller's
  caller decides whether a function runs every step, what a parameter receives). Found by
  reading the outlines of the modules whose text mentions a word any import of it must name
  (graph._path_words: its own name, the packages above it; and those of every hop that
  re-exports it), so a script nobody imports reads no other module's outline.

The scope of a module is its callers (backward, transitively, however far: a caller's caller
decides what runs every step) and everything they use (forward), at most ``depth`` imports
away from a caller (the `project-depth` setting): a name defined further away is not the
project's to answer, so unknown, and silent. A package `__init__` among the callers is read as
a hop: it re-exports what it uses. Hops are free: a chain of re-exports is bounded by the
view's own limit (``_MAX_HOPS``, as view._MAX_NAME_DEPTH). The users of a module of the scope
that lies in the linted module's own package (for a module in no package: a module in none, a
script's helper) are callers too: whether the helper's loaders are fed, or which class a method
of an unpickled model runs, is decided by every script that uses it.
Everything here is a function of the project's texts: the same module gets the same scope
whichever files a run names and in whichever order.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from torchsync_lint.project.graph import import_hints
from torchsync_lint.project.layout import Layout
from torchsync_lint.project.outline import join_name

DEFAULT_DEPTH = 2  # (config.Config.project_depth: the same default)
_MAX_HOPS = 6


@dataclass(frozen=True)
class Scope:
    modules: tuple[str, ...]  # callers and what they use, the module itself included (sorted)
    callers: tuple[str, ...]  # the module and the modules that use it, transitively (sorted)
    consulted: tuple[str, ...]  # every module whose outline decided the scope (sorted)


class Demand:
    def __init__(self, layout: Layout, modules: list[str], text_of: Callable[[str], str | None], outline_of: Callable[[str], dict], depth: int = DEFAULT_DEPTH) -> None:
        self.layout = layout
        self.modules = modules
        self.text_of = text_of
        self.outline_of = outline_of
        self.depth = depth
        self._located: dict[tuple[str, str, int], tuple[str | None, tuple[str, ...]]] = {}
        self._uses: dict[str, tuple[frozenset[str], frozenset[str], frozenset[str]]] = {}
        self._scopes: dict[str, Scope] = {}
        self._hinted: dict[str, tuple[frozenset[str], bool]] = {}
        self._searched: dict[str, tuple[dict[str, int], list[str]]] = {}
        self._users_consulted: dict[str, frozenset[str]] = {}
        self._packages = {m[: -len("/__init__.py")] for m in modules if m.endswith("/__init__.py")}

    # -- forward ------------------------------------------------------------------------------
    def locate(self, name: str, from_rel: str, hops_left: int = _MAX_HOPS) -> tuple[str | None, tuple[str, ...], frozenset[str]]:
        """(the project module that defines import name ``name`` written in ``from_rel``, or
        None; the modules passed through to get there; the modules whose outlines decided it)."""
        key = (name, from_rel, hops_left)  # (the hops left are part of the answer: no order decides it)
        if key not in self._located:
            self._located[key] = self._locate(name, from_rel, hops_left)
        return self._located[key]

    def _locate(self, name: str, from_rel: str, hops_left: int) -> tuple[str | None, tuple[str, ...], frozenset[str]]:
        found = self.layout.resolve_in(name, from_rel)
        if found is None:
            return None, (), frozenset()  # not the project's
        rel = self.layout.relpath(found[0])
        rest = found[1]
        if not rest:
            return rel, (), frozenset()  # the module itself
        head, _, tail = rest.partition(".")
        outline = self.outline_of(rel)
        read = frozenset((rel,))
        onward = outline["binds"].get(head) or outline["lazy"].get(head)
        if onward is None:
            if head in outline["defines"]:
                return rel, (), read
            for star in outline["stars"]:  # `from .b import *`: the name may be b's
                if hops_left <= 0:
                    break
                target, hops, seen = self.locate(join_name(star, rest), rel, hops_left - 1)
                read |= seen
                if target is not None:
                    return target, (rel, *hops), read
            return None, (), read  # unknown here (a name only `if TYPE_CHECKING:` imports, an unreadable structure)
        if hops_left <= 0:
            return None, (), read
        target, hops, seen = self.locate(onward + (f".{tail}" if tail else ""), rel, hops_left - 1)
        return target, (rel, *hops), read | seen

    def uses(self, rel: str) -> tuple[frozenset[str], frozenset[str], frozenset[str]]:
        """(the modules ``rel`` uses: those defining the names it imports; the hops between;
        the modules whose outlines decided them, ``rel`` included)."""
        if rel not in self._uses:
            targets: set[str] = set()
            hops: set[str] = set()
            read = {rel}
            for name in self.outline_of(rel)["demands"]:
                target, through, seen = self.locate(name, rel)
                read |= seen
                if target is not None:
                    targets.add(target)
                    hops.update(through)
            targets.discard(rel)
            self._uses[rel] = (frozenset(targets), frozenset(hops - targets - {rel}), frozenset(read))
        return self._uses[rel]

    # -- backward -------------------------------------------------------------------------------
    def _words(self, rel: str) -> set[str]:
        parts = rel.split("/")
        dirs, stem = parts[:-1], parts[-1].rsplit(".", 1)[0]
        words = {dirs[-1] if stem == "__init__" and dirs else stem}
        words.update(d for i, d in enumerate(dirs) if "/".join(dirs[: i + 1]) in self._packages)
        return words

    def _package_of(self, rel: str) -> str | None:
        """The outermost package directory holding ``rel`` (None for a module in no package)."""
        dirs = rel.split("/")[:-1]
        for i in range(1, len(dirs) + 1):
            if "/".join(dirs[:i]) in self._packages:
                return "/".join(dirs[:i])
        return None

    def _callers(self, rel: str) -> tuple[dict[str, int], list[str]]:
        """(module -> how many steps it is from using ``rel``, for ``rel`` and every module that
        uses it, transitively; the modules examined on the way)."""
        relevant = {rel}  # what a module must import from to reach rel: rel, its users, the hops that re-export them
        words = self._words(rel)
        packages = {p for p in (self._package_of(rel),) if p is not None}
        examined = {rel}
        while True:
            fresh = [m for m in self.modules if m not in examined and self._mentions(m, words, packages)]
            if not fresh:
                break
            examined.update(fresh)
            grown = True
            while grown:  # (a hop found after the module that imports through it)
                grown = False
                for m in sorted(examined - relevant):
                    targets, hops, _ = self.uses(m)
                    if not relevant.isdisjoint(targets) or not relevant.isdisjoint(hops):
                        relevant.add(m)
                        words |= self._words(m)
                        if (p := self._package_of(m)) is not None:
                            packages.add(p)
                        grown = True
        distance = {rel: 0}
        changed = True
        while changed:  # (the shortest chain of uses back to rel)
            changed = False
            for m in sorted(relevant - {rel}):
                steps = [distance[t] + 1 for t in self.uses(m)[0] if t in distance]
                if steps and min(steps) < distance.get(m, 1 << 30):
                    distance[m] = min(steps)
                    changed = True
        return distance, sorted(examined)

    def _mentions(self, rel: str, words: set[str], packages: set[str]) -> bool:
        text = self.text_of(rel)
        if text is None or "import" not in text:
            return False
        if any(w in text for w in words):  # (fast; then the words of its import statements: `train` is in `train_lora`)
            hinted, relative = self._hints(rel, text)
            if not hinted.isdisjoint(words):
                return True
            return relative and self._package_of(rel) in packages
        return "from ." in text and self._package_of(rel) in packages  # (a relative import names no path)

    def _hints(self, rel: str, text: str) -> tuple[frozenset[str], bool]:
        if rel not in self._hinted:
            self._hinted[rel] = import_hints(text)
        return self._hinted[rel]

    # -- the scope -----------------------------------------------------------------------------
    def scope(self, rel: str) -> Scope:
        if rel not in self._scopes:
            home = self._package_of(rel)
            callers: set[str] = set()
            consulted: set[str] = set()
            sources = [rel]  # the modules whose users are callers
            searched: set[str] = set()
            level: dict[str, int] = {}
            while True:
                for source in sources:
                    searched.add(source)
                    distance, _ = self._users(source)
                    callers.update(m for m in distance if m not in level and (m != source or m == rel))  # (however far: a caller's caller decides what runs every step; what the scope reaches already keeps its place)
                    consulted |= self._consulted_for_users(source)
                level = self._forward(rel, callers, consulted)
                # The users of a module of the linted file's own package (or, for a file in no
                # package, of a module in none: a script's helper) share what it does with it:
                # whether its loaders are fed, which class a method of an unpickled model runs.
                sources = sorted(m for m in level if m not in searched and self._package_of(m) == home)
                if not sources:
                    break
            self._scopes[rel] = Scope(tuple(sorted(level)), tuple(sorted(callers)), tuple(sorted(consulted)))
        return self._scopes[rel]

    def _users(self, rel: str) -> tuple[dict[str, int], list[str]]:
        if rel not in self._searched:
            self._searched[rel] = self._callers(rel)
        return self._searched[rel]

    def _consulted_for_users(self, rel: str) -> frozenset[str]:
        """The modules examined in finding ``rel``'s users and those whose outlines decided
        what each of them uses: one union per module, not one per scope that searches it (a
        package's every scope searches every module of the package: quadratic otherwise)."""
        found = self._users_consulted.get(rel)
        if found is None:
            _, examined = self._users(rel)
            union = set(examined)
            for m in examined:
                union |= self.uses(m)[2]
            found = self._users_consulted[rel] = frozenset(union)
        return found

    def _forward(self, rel: str, callers: set[str], consulted: set[str]) -> dict[str, int]:
        """module -> how many imports away from a caller it is defined, for what the callers
        use, at most ``depth`` away (hops: at the depth of the module that reads through them)."""
        # A package's `__init__` among the callers re-exports what it uses (the view resolves
        # names through it): it is read, and what else it imports is not followed.
        level = {m: self.depth if m.endswith("__init__.py") and m != rel else 0 for m in callers}
        frontier = sorted(callers)
        while frontier:
            nxt = []
            for m in frontier:
                if level[m] >= self.depth:
                    continue  # what it uses is too far: unknown
                targets, hops, seen = self.uses(m)
                consulted |= seen
                for h in hops:
                    level.setdefault(h, self.depth)  # (read for the names passing through, never followed)
                for t in sorted(targets):
                    if level.get(t, 1 << 30) > level[m] + 1:
                        level[t] = level[m] + 1
                        nxt.append(t)
            frontier = sorted(set(nxt))
        return level
