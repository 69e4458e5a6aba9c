"""torch: what its functions return and what its tensor and module methods are.

Read by analysis/calls.py. Lists of names were generated from torch 2.13 (`dir(torch.Tensor)`,
`dir(torch.nn.Module)`, public names only); the rest is hand-written from torch's docs.
"""

from __future__ import annotations

# `torch.<name>(...)` that build a new tensor (on `device=`, else on the CPU).
FACTORIES = frozenset(
    "zeros ones empty full rand randn randint randperm arange linspace logspace eye tensor "
    "as_tensor asarray zeros_like ones_like empty_like full_like rand_like randn_like "
    "randint_like from_numpy frombuffer scalar_tensor empty_strided normal".split()
)
# Factories whose result lives where their first argument does (`torch.zeros_like(t)`).
LIKE_FACTORIES = frozenset(n for n in FACTORIES if n.endswith("_like"))
# ...or where their data does: a tensor argument keeps its device, host data goes to the CPU.
DATA_FACTORIES = frozenset({"as_tensor", "asarray"})

# `torch.<name>(...)` returning Python values, objects or nothing: never a tensor.
HOST_RESULTS = frozenset(
    "is_tensor is_floating_point numel manual_seed seed initial_seed set_grad_enabled "
    "is_grad_enabled get_default_dtype no_grad enable_grad inference_mode autocast device "
    "set_default_dtype save load compile".split()
)
# Prefixes of torch namespaces whose calls return host values (queries, set-up, streams).
HOST_NAMESPACES = ("torch.cuda.", "torch.distributed.", "torch.backends.")
# The total gradient norm: a tensor on the parameters' device.
NORM_FUNCTIONS = frozenset({"torch.nn.utils.clip_grad_norm_", "torch.nn.utils.clip_grad_norm", "torch.nn.utils.get_total_norm"})
# Classes whose objects hold tensors where their arguments are, and whose methods return such
# tensors (`Categorical(logits=l).entropy()`): device inputs make device results.
TENSOR_OBJECT_NAMESPACES = ("torch.distributions.", "torch.nn.utils.rnn.")
# The methods (and properties) of those objects, which torch.Tensor lacks: `dist.sample()`,
# `dist.entropy()` of a distribution built from device tensors are device tensors.
TENSOR_OBJECT_METHODS = frozenset(
    "sample rsample sample_n log_prob entropy cdf icdf enumerate_support perplexity expand mode "
    "mean stddev variance probs logits unsorted_indices sorted_indices batch_sizes".split()
)
# Legacy typed constructors: always a CPU tensor (they reject CUDA input), filled from sizes or
# host data (`torch.FloatTensor(np_array)`).
LEGACY_CONSTRUCTORS = frozenset(
    f"torch.{n}" for n in "Tensor FloatTensor DoubleTensor HalfTensor LongTensor IntTensor ShortTensor ByteTensor BoolTensor".split()
)
# Legacy wrappers that hand back the tensor they are given, where it is (pre-0.4 code wraps
# every batch and target: `Variable(x.cuda())` is the device tensor, `Variable(t)` of a host
# tensor a host tensor).
CALLS: dict[str, str] = {
    "torch.autograd.Variable": "same",
    "torch.autograd.variable.Variable": "same",
}
# Wrappers returning the module they are given (its place unchanged).
MODEL_WRAPPERS = frozenset({"torch.compile", "torch.nn.parallel.DistributedDataParallel", "torch.nn.DataParallel", "torch.jit.script"})
# Where a wrapper (`DataParallel`, `DistributedDataParallel`, `torch.compile`) keeps the module it
# wraps: the same module, placed with the wrapper.
WRAPPED_MODULE_ATTRIBUTES = frozenset({"module", "_orig_mod"})

DTYPE_NAMES = frozenset(
    "float32 float16 bfloat16 float64 int64 int32 int16 int8 uint8 long float half double bool complex64".split()
)

# Tensor methods whose result is a host value (the read itself is what TSL101 flags).
HOST_RESULT_METHODS = frozenset(
    "item tolist numpy cpu size dim numel nelement element_size is_contiguous data_ptr "
    "get_device stride storage_offset is_floating_point is_complex is_pinned is_shared "
    "__len__ __repr__ __str__ __format__ dim_order".split()
)
# Tensor methods whose result is a host value when called with no argument: `x.type()` is the
# name of the tensor's type (a str, `'torch.cuda.HalfTensor'`); `x.type(dtype)` is a cast.
HOST_RESULT_WITHOUT_ARGUMENTS = frozenset({"type"})
HOST_ATTRIBUTES = frozenset("shape dtype device ndim is_cuda requires_grad is_leaf layout names itemsize nbytes".split())
SAME_VALUE_ATTRIBUTES = frozenset("T mT H mH data grad real imag".split())

# Every public method of `torch.Tensor` (torch 2.13).
TENSOR_METHODS = frozenset(
    """
    H T abs abs_ absolute absolute_ acos acos_ acosh acosh_ add add_ addbmm addbmm_ addcdiv addcdiv_
    addcmul addcmul_ addmm addmm_ addmv addmv_ addr addr_ adjoint all allclose amax amin aminmax
    angle any apply_ arccos arccos_ arccosh arccosh_ arcsin arcsin_ arcsinh arcsinh_ arctan arctan2
    arctan2_ arctan_ arctanh arctanh_ argmax argmin argsort argwhere as_strided as_strided_
    as_strided_scatter as_subclass asin asin_ asinh asinh_ atan atan2 atan2_ atan_ atanh atanh_
    backward baddbmm baddbmm_ bernoulli bernoulli_ bfloat16 bincount bitwise_and bitwise_and_
    bitwise_left_shift bitwise_left_shift_ bitwise_not bitwise_not_ bitwise_or bitwise_or_
    bitwise_right_shift bitwise_right_shift_ bitwise_xor bitwise_xor_ bmm bool broadcast_to byte
    cauchy_ ccol_indices cdouble ceil ceil_ cfloat chalf char cholesky cholesky_inverse
    cholesky_solve chunk clamp clamp_ clamp_max clamp_max_ clamp_min clamp_min_ clip clip_ clone
    coalesce col_indices conj conj_physical conj_physical_ const_data_ptr contiguous copy_ copysign
    copysign_ corrcoef cos cos_ cosh cosh_ count_nonzero cov cpu cross crow_indices cuda cummax
    cummin cumprod cumprod_ cumsum cumsum_ data data_ptr deg2rad deg2rad_ dense_dim dequantize det
    detach detach_ device diag diag_embed diagflat diagonal diagonal_scatter diff digamma digamma_
    dim dim_order dist div div_ divide divide_ dot double dsplit dtype eig element_size eq eq_ equal
    erf erf_ erfc erfc_ erfinv erfinv_ exp exp2 exp2_ exp_ expand expand_as expm1 expm1_
    exponential_ fill_ fill_diagonal_ fix fix_ flatten flip fliplr flipud float float_power
    float_power_ floor floor_ floor_divide floor_divide_ fmax fmin fmod fmod_ frac frac_ frexp
    gather gcd gcd_ ge ge_ geometric_ geqrf ger get_device grad grad_dtype grad_fn greater greater_
    greater_equal greater_equal_ gt gt_ half hardshrink hash_tensor heaviside heaviside_ histc
    histogram hsplit hypot hypot_ i0 i0_ igamma igamma_ igammac igammac_ imag index index_add
    index_add_ index_copy index_copy_ index_fill index_fill_ index_put index_put_ index_reduce
    index_reduce_ index_select indices inner int int_repr inverse ipu is_coalesced is_complex
    is_conj is_contiguous is_cpu is_cuda is_distributed is_floating_point is_inference is_ipu
    is_leaf is_maia is_meta is_mkldnn is_mps is_mtia is_neg is_nested is_nonzero is_pinned
    is_quantized is_same_size is_set_to is_shared is_signed is_sparse is_sparse_csr is_vulkan is_xla
    is_xpu isclose isfinite isinf isnan isneginf isposinf isreal istft item itemsize kron kthvalue
    layout lcm lcm_ ldexp ldexp_ le le_ lerp lerp_ less less_ less_equal less_equal_ lgamma lgamma_
    log log10 log10_ log1p log1p_ log2 log2_ log_ log_normal_ log_softmax logaddexp logaddexp2
    logcumsumexp logdet logical_and logical_and_ logical_not logical_not_ logical_or logical_or_
    logical_xor logical_xor_ logit logit_ logsumexp long lstsq lt lt_ lu lu_solve mH mT map2_ map_
    masked_fill masked_fill_ masked_scatter masked_scatter_ masked_select matmul matrix_exp
    matrix_power max maximum mean median min minimum mm mode module_load moveaxis movedim msort mtia
    mul mul_ multinomial multiply multiply_ mv mvlgamma mvlgamma_ name nan_to_num nan_to_num_
    nanmean nanmedian nanquantile nansum narrow narrow_copy nbytes ndim ndimension ne ne_ neg neg_
    negative negative_ nelement new new_empty new_empty_strided new_full new_ones new_tensor
    new_zeros nextafter nextafter_ nonzero nonzero_static norm normal_ not_equal not_equal_ numel
    numpy orgqr ormqr outer output_nr permute pin_memory pinverse polygamma polygamma_ positive pow
    pow_ prelu prod put put_ q_per_channel_axis q_per_channel_scales q_per_channel_zero_points
    q_scale q_zero_point qr qscheme quantile rad2deg rad2deg_ random_ ravel real reciprocal
    reciprocal_ record_stream register_hook register_post_accumulate_grad_hook reinforce relu relu_
    remainder remainder_ renorm renorm_ repeat repeat_interleave requires_grad requires_grad_
    reshape reshape_as resize resize_ resize_as resize_as_ resize_as_sparse_ resolve_conj
    resolve_neg retain_grad retains_grad roll rot90 round round_ row_indices rsqrt rsqrt_ scatter
    scatter_ scatter_add scatter_add_ scatter_reduce scatter_reduce_ select select_scatter set_ sgn
    sgn_ shape share_memory_ short sigmoid sigmoid_ sign sign_ signbit sin sin_ sinc sinc_ sinh
    sinh_ size slice_inverse slice_scatter slogdet smm softmax solve sort sparse_dim sparse_mask
    sparse_resize_ sparse_resize_and_clear_ split split_with_sizes sqrt sqrt_ square square_ squeeze
    squeeze_ sspaddmm std stft storage storage_offset storage_type stride sub sub_ subtract
    subtract_ sum sum_to_size svd swapaxes swapaxes_ swapdims swapdims_ symeig t t_ take
    take_along_dim tan tan_ tanh tanh_ tensor_split tile to to_dense to_mkldnn to_padded_tensor
    to_sparse to_sparse_bsc to_sparse_bsr to_sparse_coo to_sparse_csc to_sparse_csr tolist topk
    trace transpose transpose_ triangular_solve tril tril_ triu triu_ true_divide true_divide_ trunc
    trunc_ type type_as unbind unflatten unfold uniform_ unique unique_consecutive unsafe_chunk
    unsafe_split unsafe_split_with_sizes unsqueeze unsqueeze_ untyped_storage values var vdot view
    view_as volatile vsplit where xlogy xlogy_ xpu zero_
    """.split()
)
# Every public method of `torch.nn.Module` (torch 2.13).
# Tensor methods that may copy their receiver to another device: `.to(d)`, `.cuda()`,
# `.type(torch.cuda.FloatTensor)` and `.type_as(t)` (to where `t` is); analysis/devices.py
# `copy_destination` says where each call sends it.
COPY_METHODS = frozenset({"to", "cuda", "type", "type_as"})
MODULE_METHODS = frozenset(
    """
    T_destination add_module apply bfloat16 buffers call_super_init children compile cpu cuda double
    dump_patches eval extra_repr float forward get_buffer get_extra_state get_parameter
    get_submodule half ipu load_state_dict modules mtia named_buffers named_children named_modules
    named_parameters parameters register_backward_hook register_buffer register_forward_hook
    register_forward_pre_hook register_full_backward_hook register_full_backward_pre_hook
    register_load_state_dict_post_hook register_load_state_dict_pre_hook register_module
    register_parameter register_state_dict_post_hook register_state_dict_pre_hook requires_grad_
    set_extra_state set_submodule share_memory state_dict to to_empty train type xpu zero_grad
    """.split()
)
# Names both define (`to`, `cuda`, `float`...): they do not tell a tensor from a module.
SHARED_METHODS = TENSOR_METHODS & MODULE_METHODS
# Module methods returning the module itself.
MODEL_METHODS_RETURNING_MODEL = frozenset("to cuda cpu train eval half float double bfloat16 requires_grad_ share_memory xpu to_empty".split())
# ...and of those, the ones the project view follows as the same module, placed or not (`.cpu()`
# takes it off the device: not followed).
MODEL_METHODS_KEEPING_MODEL = MODEL_METHODS_RETURNING_MODEL - {"cpu"}
# A module's tensors live where the module does: `parameters()` is a container of them;
# `named_parameters()` yields (host name, tensor) pairs.
MODEL_TENSOR_ITERATORS = frozenset({"parameters", "buffers"})
MODEL_NAMED_TENSOR_ITERATORS = frozenset({"named_parameters", "named_buffers"})
# ...and its submodules with it: `children()`/`modules()` are containers of modules placed
# where it is (`list(model.children())[-1]` is a module on the model's device).
MODEL_SUBMODULE_ITERATORS = frozenset({"children", "modules"})

# Explicit synchronisation of the host with an accelerator.
SYNC_FUNCTIONS = frozenset(
    {
        "torch.cuda.synchronize", "torch.accelerator.synchronize", "torch.mps.synchronize", "torch.xpu.synchronize",
        "torch.npu.synchronize", "torch.hpu.synchronize", "torch.mtia.synchronize", "torch.cuda.Event.synchronize",
        "torch.cuda.Stream.synchronize",
    }
)
SYNC_OBJECTS = frozenset(
    {
        "torch.cuda.Event", "torch.cuda.Stream", "torch.cuda.current_stream", "torch.cuda.default_stream", "torch.Event",
        "torch.Stream", "torch.accelerator.current_stream", "torch.xpu.Event", "torch.xpu.Stream", "torch.npu.Event",
        "torch.npu.Stream", "torch.npu.current_stream", "torch.mps.event.Event",
    }
)

# Methods that read their own object's device state on the host: `GradScaler.get_scale()`
# calls `.item()` on the scale (when the scaler is enabled on CUDA).
SELF_READING_METHODS = frozenset(
    {(cls, "get_scale") for cls in ("torch.cuda.amp.GradScaler", "torch.amp.GradScaler", "torch.GradScaler")}
)

# Tensor methods that reshape or cast a tensor where it is (no copy to another device): a
# factory's result passed through them is still a fresh host tensor
# (`torch.linspace(...).unsqueeze(1).expand(n, m).to(device)`).
RESHAPING_METHODS = frozenset(
    "unsqueeze squeeze expand expand_as view view_as reshape reshape_as repeat t transpose permute flatten "
    "contiguous long float double half int bool byte short clone detach flip".split()
)
