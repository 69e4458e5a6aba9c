"""The analysis repros (tests/data/repro/analysis, from shared/repro: small programs written for
this project, one per class of analysis error): each gives exactly the findings listed here when
linted alone. fp_*: false positives that must stay gone (only the listed, real hazards remain);
fn_*: hazards that must be found; ctl_*: controls that already worked.

Then determinism: for every fixture and repro, the findings with all rules selected equal the
union of the findings with each rule selected alone (a memoised answer must never depend on which
rule asked first).
"""

from __future__ import annotations

import collections
import glob
import os

import pytest

from torchsync_lint.engine import lint_source
from torchsync_lint.rule import load_rules

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
REPRO = os.path.join(ROOT, "tests", "data", "repro", "analysis")

# (line, code), with repeats when one line holds two findings of a code (`x.to(d), y.to(d)`).
EXPECTED: dict[str, list[tuple[int, str]]] = {
    "fp_A_tuple_unpack_call.py": [],
    "fp_B_opaque_model_pollution.py": [],
    "fp_B2_opaque_model_cuda_named_params.py": [(9, "TSL102")],  # the per-parameter NaN check is real
    "fp_C1_function_as_argument.py": [],
    "fp_C2_model_constructor_makes_step_like.py": [],
    "fp_D_dict_literal_subscript.py": [],
    "fp_E_if_block_rebind.py": [(9, "TSL305"), (10, "TSL101")],
    "fp_F_like_factory_unknown.py": [],
    "fp_G_cpu_model_in_cuda_file.py": [],
    "fp_H_failure_branch.py": [(8, "TSL101")],
    "fn_N1_library_loader_factory.py": [(8, "TSL301"), (8, "TSL301")],
    "fn_N1b_param_loader_no_caller.py": [(5, "TSL301"), (5, "TSL301"), (9, "TSL101")],
    "fn_N1c_param_loader_and_model_dict_batch.py": [(6, "TSL301"), (11, "TSL101")],
    "fn_N2a_log_every_wrapper.py": [(10, "TSL301"), (10, "TSL301")],
    "fn_N2b_tqdm_bound_to_name.py": [(9, "TSL301"), (12, "TSL301")],
    "fn_N3_tuple_of_host_tensors.py": [(11, "TSL301"), (11, "TSL301")],
    "fn_N4b_instance_call_dunder_call.py": [(6, "TSL105")],
    "fn_N5_accelerate_prepare.py": [(10, "TSL103")],
    # numpy values from the environment: TSL202; the per-step `as_tensor(obs_np, device=)` copy is a TSL305
    "fn_N5_gym_numpy_to_device_metric.py": [(9, "TSL101"), (10, "TSL305"), (12, "TSL201"), (12, "TSL202"), (13, "TSL201"), (13, "TSL202")],
    "fn_N5_hf_metric_add_batch.py": [(9, "TSL101")],
    "fn_N5_library_cpu_table.py": [(8, "TSL301")],
    "fn_N5_prepared_model_named_params.py": [(12, "TSL102")],
    "fn_N6_math_on_device_tensor.py": [(9, "TSL101"), (11, "TSL101")],
    "fn_N7_rl_rollout_not_hot.py": [(14, "TSL101"), (15, "TSL305")],
    "fn_N8_api_gaps.py": [(8, "TSL104"), (9, "TSL101"), (9, "TSL305"), (10, "TSL305")],
    "fn_N8_numpy_normalize_getitem.py": [(9, "TSL304")],
    "fn_N9a_device_value_into_cpu_tensor.py": [(7, "TSL101")],
    "fn_N9b_subscript_store_batch.py": [(12, "TSL101")],
    "fn_N9c_host_tensor_into_device_slice.py": [(7, "TSL305")],
    "fn_N10_memo_order_cycle.py": [(15, "TSL101")],
    "fn_N11_transform_via_with_transform.py": [(5, "TSL304")],
    "fn_N12_stacked_bool_mask.py": [(9, "TSL105")],
    "fn_N13_values_in_attributes.py": [(7, "TSL103")],
    "fn_N13b_tuple_attr_assign.py": [(8, "TSL101")],
    "fn_N14_percent_format_computed.py": [(10, "TSL103"), (11, "TSL103")],
    "ctl_C2_non_model_name.py": [],
    "ctl_N1_local_dataloader.py": [(8, "TSL301"), (8, "TSL301")],
    "ctl_N3_single_return.py": [(10, "TSL301")],
    "ctl_N4b_named_method_with_caller.py": [(6, "TSL105")],
    "ctl_N4c_object_built_here.py": [(13, "TSL101")],
    "ctl_N5_nn_module_named_params.py": [(8, "TSL102")],
    "ctl_N5_no_prepare.py": [(9, "TSL103")],
    "ctl_N7_rollout_direct_model_call.py": [(14, "TSL101"), (15, "TSL305")],
    "ctl_N8_numpy_div255_getitem.py": [(9, "TSL304")],
    "ctl_N9b_rebind_batch.py": [(11, "TSL101")],
    "ctl_N10_distinct_names.py": [(15, "TSL101")],
    "ctl_N11_transform_as_dataset_arg.py": [(5, "TSL304")],
    "ctl_N12_comparison_mask.py": [(9, "TSL105")],
    "ctl_N13b_single_attr_assign.py": [(9, "TSL101")],
}
# These need another module of a project: linted alone they find nothing, and must not guess
# (the project-view tests check them with their other modules).
ALONE_SILENT = ["fn_N4a_helper_in_other_module.py", "fn_N4b_percall_class_no_caller.py", "fn_N4c_object_built_elsewhere.py"]


def _read(path: str) -> str:
    with open(path, encoding="utf-8") as f:
        return f.read()


def _findings(path: str, codes: set[str] | None = None) -> list[tuple[int, int, str]]:
    settings = {"torchmetrics-version": "1.9.0"}
    return [(f.line, f.column, f.code) for f in lint_source(_read(path), path, codes, settings) if f.severity != "error"]


def test_every_repro_file_has_an_expectation():
    names = {os.path.basename(p) for p in glob.glob(os.path.join(REPRO, "*.py"))}
    assert names == set(EXPECTED) | set(ALONE_SILENT)


@pytest.mark.parametrize("name", sorted(EXPECTED))
def test_repro_gives_exactly_its_findings(name):
    got = collections.Counter((line, code) for line, _, code in _findings(os.path.join(REPRO, name)))
    assert got == collections.Counter(EXPECTED[name])


@pytest.mark.parametrize("name", ALONE_SILENT)
def test_cross_module_repro_is_silent_alone(name):
    assert _findings(os.path.join(REPRO, name)) == []


_SOURCES = sorted(glob.glob(os.path.join(REPRO, "*.py")) + glob.glob(os.path.join(ROOT, "fixtures", "**", "*.py"), recursive=True))


@pytest.mark.parametrize("path", _SOURCES, ids=lambda p: os.path.relpath(p, ROOT))
def test_findings_do_not_depend_on_the_rule_selection(path):
    codes = set(load_rules())
    together = set(_findings(path, codes))
    alone: set = set()
    for code in sorted(codes):
        alone |= set(_findings(path, {code}))
    assert together == alone
