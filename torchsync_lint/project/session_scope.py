"""The demand-driven part of a project Session (project/session.py): each module's scope
(project/demand.py) from the modules' outlines (project/outline.py) through the cache, and the
digest a cached result depends on. A mixin: it reads the Session's files, texts, cache, layout
and settings.

A module's view holds the summaries of its scope, nothing else: the modules that may call it
and those they use, name by name, up to `project-depth` imports away. Its cached result is
valid while the texts that decided its scope (the modules in it, and every module whose
outline the search read) and the project's files are unchanged."""

from __future__ import annotations

from torchsync_lint.project.cache import digest
from torchsync_lint.project.demand import Demand, Scope
from torchsync_lint.project.outline import OUTLINE_VERSION, outline, valid_outline
from torchsync_lint.project.view import SUMMARY_VERSION


class DemandScope:
    def _demand_of(self) -> Demand:
        if self._demand is None:
            self._demand = Demand(self.layout, self.modules(), self._text, self._outline, self.depth)
        return self._demand

    def _outline(self, rel: str) -> dict:
        """``rel``'s outline (an empty one when it cannot be read), through the cache."""
        if rel not in self._outlines:
            sha = self._sha(rel)
            stored = sha is not None and self.cache.enabled and not self._in_memory(rel)
            key = digest("outline", OUTLINE_VERSION, sha) if stored else None
            found = self.cache.get("outlines", key, valid_outline) if stored else None
            if found is None:
                found = outline(self._text(rel) if sha is not None else None)
                if stored:
                    self.cache.put("outlines", key, found)
            self._outlines[rel] = found
        return self._outlines[rel]

    def scope(self, rel: str) -> Scope:
        """The modules ``rel``'s view holds (project/demand.py), through the cache: a scope is
        a function of the project's texts and files, so a warm run reads no outline to find it."""
        if rel not in self.modules():
            return Scope((rel,), (rel,), ())
        if rel not in self._scope_memo:
            key = self._scope_key(rel)
            stored = self.cache.get("scopes", key, _valid_scope) if key is not None else None
            if stored is not None:
                found = Scope(*(tuple(part) for part in stored))
            else:
                found = self._demand_of().scope(rel)
                if key is not None:
                    self.cache.put("scopes", key, [list(found.modules), list(found.callers), list(found.consulted)])
            self._scope_memo[rel] = found
        return self._scope_memo[rel]

    def _scope_key(self, rel: str) -> str | None:
        """What a scope depends on: every text of the project (who may import ``rel``), which
        files it has, its import roots and the depth; None when a text is in memory (never cached)."""
        if not self.cache.enabled:
            return None
        if self._project_texts is None:
            files = self.modules()
            self._project_texts = "" if any(self._in_memory(m) for m in files) else digest("texts", [(m, self._sha(m)) for m in files])
        if not self._project_texts:
            return None
        return digest("scope", OUTLINE_VERSION, rel, self.depth, self._roots(), self._project_texts)

    def linked(self, rel: str) -> bool:
        """Does ``rel``'s scope hold another module (else it is linted alone)?"""
        return len(self.scope(rel).modules) > 1

    def dependencies(self, rel: str) -> str:
        """A digest of everything the project view can tell ``rel``: its cached result is valid
        while this is unchanged ("" for a module linted alone). Every summary is a function of
        its module's text, the settings and this code, so the texts' hashes stand for them; the
        scope is a function of the texts it consulted and of which files the project has."""
        if not self.linked(rel):
            return ""
        if rel not in self._deps:
            scope = self.scope(rel)
            texts = [(m, self._sha(m)) for m in sorted({*scope.modules, *scope.consulted})]
            self._deps[rel] = digest("scope", SUMMARY_VERSION, OUTLINE_VERSION, self.depth, self._roots(), self.settings, self.modules(), texts)
        return self._deps[rel]


def _valid_scope(value) -> bool:
    return isinstance(value, list) and len(value) == 3 and all(isinstance(part, list) and all(isinstance(m, str) for m in part) for part in value)
