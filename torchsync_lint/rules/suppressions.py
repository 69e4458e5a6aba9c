"""TSL9xx: findings about the suppression comments themselves. The engine reports them after the
rules ran (it alone knows which comment silenced what: torchsync_lint/unused_noqa.py); the class
here carries the code, the docs and the cases."""

from __future__ import annotations

from torchsync_lint.rule import Rule
from torchsync_lint.rules._cases import in_loop
from torchsync_lint.types import Invalid, Valid
from torchsync_lint.unused_noqa import CODE, NAME

_WITH_TSL101 = {"select": ("TSL101",)}  # the cases judge TSL101's codes: that rule must run
_WITH_TSL1 = {"select": ("TSL101", "TSL102", "TSL103", "TSL104", "TSL105", "TSL106")}


class UnusedSuppression(Rule):
    """
    ## What it does
    Flags a TSL code in a `# noqa: ...` or `# torchsync: ignore[...]` comment that silences
    no finding, as ruff's RUF100 does, and a TSL code that names no rule.

    A code is judged only when its rule ran on the file: a code that is deselected, ignored
    (per-file ignores too) or that the environment turns off (TSL203 without a configured
    `torchmetrics-version`) is left alone, since it may be used under another selection. A
    prefix (`TSL1`) is judged when every rule it names ran. Blanket comments (`# noqa`,
    `# torchsync: ignore`) and other tools' codes (`E501`) are never reported; under the
    flake8 plugin, `# noqa` is flake8's and only `# torchsync: ignore[...]` is judged.
    Silence it with `# noqa: TSL904` on the line, or `--ignore TSL904`.

    ## Why is this bad?
    A stale suppression hides the next finding of that code on the statement, the one that
    was not there when the comment was written. After `--add-noqa` adopts a codebase, each
    fixed sync should take its `# noqa` with it; otherwise the baseline goes stale silently.

    ## Example
    ```python
    for x, y in loader:
        loss = criterion(model(x.to(device)), y.to(device))
        loss.backward()
        losses.append(loss.detach())  # noqa: TSL101
    ```

    ## Use instead
    ```python
    for x, y in loader:
        loss = criterion(model(x.to(device)), y.to(device))
        loss.backward()
        losses.append(loss.detach())
    ```

    ## Fix safety
    Safe: it removes the unused TSL codes only, keeps other tools' codes (`# noqa: E501`) and
    the rest of the comment, and removes the directive (or the whole comment) when no code is
    left; a `# noqa:` is never left without codes, which would silence everything.
    """

    code = CODE
    name = NAME
    message = "unused suppression: {codes} silence nothing here"
    fix_title = "Remove the unused codes"
    runtime_observable = False  # about comments: nothing happens at runtime

    VALID = [
        Valid(in_loop("total += loss.item()  # noqa: TSL101"), config=_WITH_TSL101),
        Valid(in_loop("kept = loss.detach()  # noqa: TSL101")),  # TSL101 did not run: not judged
        Valid(in_loop("kept = loss.detach()  # noqa: E501")),  # another tool's code
        Valid(in_loop("kept = loss.detach()  # noqa")),  # blanket: may serve any tool
        Valid(in_loop("total += (\n    loss.item()\n)  # noqa: TSL101"), config=_WITH_TSL101),  # a later line of the statement
        Valid(in_loop("kept = loss.detach()  # noqa: TSL101, TSL904"), config=_WITH_TSL101),
        Valid(in_loop("kept = loss.detach()  # noqa: TSL1"), config=_WITH_TSL101),  # TSL102-106 did not run
    ]
    INVALID = [
        Invalid(
            in_loop("kept = loss.detach()  # noqa: TSL101"), message_contains="`TSL101` silences nothing",
            expected_fix=in_loop("kept = loss.detach()"), config=_WITH_TSL101,
        ),
        Invalid(
            in_loop("kept = loss.detach()  # noqa: E501, TSL101"),
            expected_fix=in_loop("kept = loss.detach()  # noqa: E501"), config=_WITH_TSL101,
        ),
        Invalid(
            in_loop("total += loss.item()  # torchsync: ignore[TSL101, TSL102]"),
            expected_fix=in_loop("total += loss.item()  # torchsync: ignore[TSL101]"), config=_WITH_TSL1,
        ),
        Invalid(
            in_loop("# keep the reference alive\nkept = loss.detach()  # noqa: TSL101 slow on purpose"),
            expected_fix=in_loop("# keep the reference alive\nkept = loss.detach()  # slow on purpose"), config=_WITH_TSL101,
        ),
        Invalid(in_loop("total += loss.item()  # noqa: TSL101, TSL199"), message_contains="`TSL199` names no rule", config=_WITH_TSL101),
        Invalid(in_loop("kept = loss.detach()  # noqa: TSL1"), expected_fix=in_loop("kept = loss.detach()"), config=_WITH_TSL1),
    ]
