"""Inline expectations are read from comment tokens."""

from torchsync_lint.markers import read_markers_source


def test_expect_and_expect_sync_markers():
    src = "x = 1  # expect: TSL101, TSL305\ns = '# expect: TSL999'\ny = 2  # expect-sync: inside a library\n"
    got = [(m.line, m.code, m.kind) for m in read_markers_source(src)]
    assert got == [(1, "TSL101", "expect"), (1, "TSL305", "expect"), (3, None, "expect-sync")]


def test_a_file_that_does_not_tokenize_keeps_the_markers_before_the_error():
    src = "x = 1  # expect: TSL101\ny = (\n"
    assert [(m.line, m.code) for m in read_markers_source(src)] == [(1, "TSL101")]
