"""The allow-list: the operations a graph records and a spec may name.

An operation is on it if it computes new tensors (or numbers, or views within
its input) from its arguments and nothing else. Each name was reviewed against
torch's public namespaces (torch 2.13); a name torch adds later is refused until
it is reviewed and listed here. Left out, and so refused by specs and by graphs
defined in Python alike:

- in-place methods (``x.add_``), whose twins without ``_`` are listed;
- what reads or writes memory beyond the values given: ``as_strided`` and its
  copies and scatters, ``slice_inverse`` (a slice's base), ``stride``,
  ``storage_offset``, ``storage_type``, ``dim_order``, ``is_contiguous``,
  ``is_set_to``, ``is_shared``, ``is_pinned``, ``const_data_ptr``, and the
  constructors of uninitialised memory (``new``, ``new_empty_strided``, ``resize``);
- what updates its arguments: ``torch.batch_norm``, ``torch.instance_norm`` and
  ``torch.native_batch_norm`` (``F.batch_norm``/``F.instance_norm`` are listed,
  with their running statistics checked, see :data:`UPDATED_ARGUMENTS`), the
  synchronised batch norm's internals, ``fused_moving_avg_obs_fake_quant``, and
  the backend kernels ``torch.fbgemm_*`` and ``torch.miopen_*``;
- what takes a string to format or a function to call:
  ``F.assert_int_or_pair`` (its message is a ``str.format`` template),
  ``F.triplet_margin_with_distance_loss`` and ``torch.lobpcg``;
- ``unsafe_split``/``unsafe_chunk`` (views hidden from autograd; ``split`` and
  ``chunk`` are listed) and ``reinforce`` (removed from torch).

Arguments are checked as well, when a graph records a call: ``out=`` is
refused (it writes into a tensor the graph does not own) and ``inplace=True``
is recorded as the out-of-place call.
"""

from __future__ import annotations

__all__ = ["FUNCTIONS", "METHODS"]


def _names(text: str) -> frozenset[str]:
    return frozenset(text.split())


FUNCTIONS: dict[str, frozenset[str]] = {
    "torch": _names(
        """
        abs absolute acos acosh adaptive_avg_pool1d adaptive_max_pool1d add addbmm addcdiv addcmul addmm addmv
        addr adjoint affine_grid_generator alias_copy all allclose alpha_dropout amax amin aminmax angle any
        arange arccos arccosh arcsin arcsinh arctan arctan2 arctanh argmax argmin argsort argwhere asin asinh
        atan atan2 atanh atleast_1d atleast_2d atleast_3d avg_pool1d baddbmm bernoulli bilinear
        binary_cross_entropy_with_logits bincount binomial bitwise_and bitwise_left_shift bitwise_not bitwise_or
        bitwise_right_shift bitwise_xor block_diag bmm broadcast_tensors broadcast_to bucketize cartesian_prod
        cat ccol_indices_copy cdist ceil celu chain_matmul channel_shuffle cholesky cholesky_inverse
        cholesky_solve choose_qparams_optimized chunk clamp clamp_max clamp_min clip clone col_indices_copy
        column_stack combinations complex concat concatenate conj conj_physical constant_pad_nd conv1d conv2d
        conv3d conv_tbc conv_transpose1d conv_transpose2d conv_transpose3d convolution copysign corrcoef cos
        cosh cosine_embedding_loss cosine_similarity count_nonzero cov cross crow_indices_copy ctc_loss cummax
        cummin cumprod cumsum cumulative_trapezoid deg2rad dequantize det detach detach_copy diag diag_embed
        diagflat diagonal diagonal_copy diagonal_scatter diff digamma dist div divide dot dropout dsmm dsplit
        dstack einsum embedding embedding_bag empty_like eq equal erf erfc erfinv exp exp2 expand_copy expm1 eye
        fake_quantize_per_channel_affine fake_quantize_per_tensor_affine feature_alpha_dropout feature_dropout
        fix flatten flip fliplr flipud float_power floor floor_divide fmax fmin fmod frac frexp frobenius_norm
        full full_like gather gcd ge geqrf ger get_device gradient greater greater_equal grid_sampler
        grid_sampler_2d grid_sampler_3d group_norm gru gru_cell gt hardshrink hash_tensor heaviside
        hinge_embedding_loss histc histogram histogramdd hsmm hsplit hstack hypot i0 igamma igammac imag
        index_add index_copy index_fill index_put index_reduce index_select indices_copy inner int_repr inverse
        is_complex is_conj is_distributed is_floating_point is_inference is_neg is_nonzero is_same_size
        is_signed isclose isfinite isin isinf isnan isneginf isposinf isreal istft kl_div kron kthvalue
        layer_norm lcm ldexp le lerp less less_equal lgamma log log10 log1p log2 log_softmax logaddexp
        logaddexp2 logcumsumexp logdet logical_and logical_not logical_or logical_xor logit logsumexp lstm
        lstm_cell lt lu lu_solve lu_unpack margin_ranking_loss masked_fill masked_scatter masked_select matmul
        matrix_exp matrix_power max max_pool1d max_pool1d_with_indices max_pool2d max_pool3d maximum mean median
        meshgrid min minimum mode moveaxis movedim msort mul multinomial multiply mv mvlgamma nan_to_num nanmean
        nanmedian nanquantile nansum narrow narrow_copy native_channel_shuffle native_dropout native_group_norm
        native_layer_norm native_norm ne neg negative nextafter nonzero nonzero_static norm norm_except_dim
        not_equal nuclear_norm numel ones ones_like orgqr ormqr outer pairwise_distance pca_lowrank pdist
        permute permute_copy pinverse pixel_shuffle pixel_unshuffle poisson poisson_nll_loss polar polygamma
        positive pow prelu prod put q_per_channel_axis q_per_channel_scales q_per_channel_zero_points q_scale
        q_zero_point qr quantile quantize_per_channel quantize_per_tensor quantize_per_tensor_dynamic
        quantized_batch_norm quantized_gru_cell quantized_lstm_cell quantized_max_pool1d quantized_max_pool2d
        quantized_max_pool3d quantized_rnn_relu_cell quantized_rnn_tanh_cell rad2deg ravel real reciprocal relu
        remainder renorm repeat_interleave reshape resolve_conj resolve_neg rms_norm rnn_relu rnn_relu_cell
        rnn_tanh rnn_tanh_cell roll rot90 round row_indices_copy row_stack rrelu rsqrt rsub saddmm scatter
        scatter_add scatter_reduce searchsorted select select_copy select_scatter selu sgn sigmoid sign signbit
        sin sinc sinh slice_copy slice_scatter slogdet smm softmax sort split split_copy split_with_sizes
        split_with_sizes_copy sqrt square squeeze squeeze_copy stack std std_mean stft sub subtract sum svd
        svd_lowrank swapaxes swapdims sym_float sym_int sym_ite sym_max sym_min sym_not sym_sqrt sym_sum t
        t_copy take take_along_dim tan tanh tensor_split tensordot threshold tile topk trace transpose
        transpose_copy trapezoid trapz triangular_solve tril triplet_margin_loss triu true_divide trunc unbind
        unbind_copy unflatten unfold_copy unique unique_consecutive unravel_index unsqueeze unsqueeze_copy
        values_copy var var_mean vdot view_as_complex view_as_complex_copy view_as_real view_as_real_copy
        view_copy vsplit vstack where xlogy zeros zeros_like
        """
    ),
    "F": _names(
        """
        adaptive_avg_pool2d adaptive_avg_pool3d adaptive_max_pool1d adaptive_max_pool1d_with_indices
        adaptive_max_pool2d adaptive_max_pool2d_with_indices adaptive_max_pool3d
        adaptive_max_pool3d_with_indices affine_grid alpha_dropout avg_pool2d avg_pool3d batch_norm
        binary_cross_entropy binary_cross_entropy_with_logits celu cosine_embedding_loss cross_entropy ctc_loss
        dropout dropout1d dropout2d dropout3d elu embedding embedding_bag feature_alpha_dropout fold
        fractional_max_pool2d fractional_max_pool2d_with_indices fractional_max_pool3d
        fractional_max_pool3d_with_indices gaussian_nll_loss gelu glu grid_sample group_norm grouped_mm
        gumbel_softmax hardsigmoid hardswish hardtanh hinge_embedding_loss huber_loss instance_norm interpolate
        kl_div l1_loss layer_norm leaky_relu linear linear_cross_entropy local_response_norm log_softmax
        logsigmoid lp_pool1d lp_pool2d lp_pool3d margin_ranking_loss max_pool1d max_pool1d_with_indices
        max_pool2d max_pool2d_with_indices max_pool3d max_pool3d_with_indices max_unpool1d max_unpool2d
        max_unpool3d mish mse_loss multi_head_attention_forward multi_margin_loss multilabel_margin_loss
        multilabel_soft_margin_loss nll_loss normalize one_hot pad poisson_nll_loss relu relu6 rms_norm rrelu
        scaled_dot_product_attention scaled_grouped_mm scaled_mm selu sigmoid silu smooth_l1_loss
        soft_margin_loss softmax softmin softplus softshrink softsign tanh tanhshrink threshold
        triplet_margin_loss unfold upsample upsample_bilinear upsample_nearest
        """
    ),
    "torch.linalg": _names(
        """
        cholesky cholesky_ex cond cross det diagonal eig eigh eigvals eigvalsh householder_product inv inv_ex
        ldl_factor ldl_factor_ex ldl_solve lstsq lu lu_factor lu_factor_ex lu_solve matmul matrix_exp
        matrix_norm matrix_power matrix_rank multi_dot norm pinv qr slogdet solve solve_ex solve_triangular svd
        svdvals tensorinv tensorsolve vander vecdot vector_norm
        """
    ),
    "torch.special": _names(
        """
        airy_ai bessel_j0 bessel_j1 bessel_y0 bessel_y1 chebyshev_polynomial_t chebyshev_polynomial_u
        chebyshev_polynomial_v chebyshev_polynomial_w digamma entr erf erfc erfcx erfinv exp2 expit expm1
        gammainc gammaincc gammaln hermite_polynomial_h hermite_polynomial_he i0 i0e i1 i1e
        laguerre_polynomial_l legendre_polynomial_p log1p log_ndtr log_softmax logit logsumexp
        modified_bessel_i0 modified_bessel_i1 modified_bessel_k0 modified_bessel_k1 multigammaln ndtr ndtri
        polygamma psi round scaled_modified_bessel_k0 scaled_modified_bessel_k1 shifted_chebyshev_polynomial_t
        shifted_chebyshev_polynomial_u shifted_chebyshev_polynomial_v shifted_chebyshev_polynomial_w sinc
        softmax spherical_bessel_j0 xlog1py xlogy zeta
        """
    ),
    "torch.fft": _names(
        """
        fft fft2 fftn fftshift hfft hfft2 hfftn ifft ifft2 ifftn ifftshift ihfft ihfft2 ihfftn irfft irfft2
        irfftn rfft rfft2 rfftn
        """
    ),
    "torch.Tensor": _names(
        """
        index istft lu norm split stft unique unique_consecutive
        """
    ),
}
"""The functions a spec may name, by the namespace it names them in."""

METHODS = _names(
    """
    abs absolute acos acosh add addbmm addcdiv addcmul addmm addmv addr adjoint all allclose amax amin
    aminmax angle any arccos arccosh arcsin arcsinh arctan arctan2 arctanh argmax argmin argsort argwhere
    asin asinh atan atan2 atanh baddbmm bernoulli bfloat16 bincount bitwise_and bitwise_left_shift
    bitwise_not bitwise_or bitwise_right_shift bitwise_xor bmm bool broadcast_to byte ccol_indices cdouble
    ceil cfloat chalf char cholesky cholesky_inverse cholesky_solve chunk clamp clamp_max clamp_min clip
    clone coalesce col_indices conj conj_physical contiguous copysign corrcoef cos cosh count_nonzero cov
    cpu cross crow_indices cuda cummax cummin cumprod cumsum deg2rad dense_dim dequantize det detach diag
    diag_embed diagflat diagonal diagonal_scatter diff digamma dim dist div divide dot double dsplit eig
    element_size eq equal erf erfc erfinv exp exp2 expand expand_as expm1 fix flatten flip fliplr flipud
    float float_power floor floor_divide fmax fmin fmod frac frexp gather gcd ge geqrf ger get_device
    greater greater_equal gt half hardshrink hash_tensor heaviside histc histogram hsplit hypot i0 igamma
    igammac index index_add index_copy index_fill index_put index_reduce index_select indices inner int
    int_repr inverse ipu is_coalesced is_complex is_conj is_distributed is_floating_point is_inference
    is_neg is_nonzero is_same_size is_signed isclose isfinite isinf isnan isneginf isposinf isreal istft
    kron kthvalue lcm ldexp le lerp less less_equal lgamma log log10 log1p log2 log_softmax logaddexp
    logaddexp2 logcumsumexp logdet logical_and logical_not logical_or logical_xor logit logsumexp long lstsq
    lt lu lu_solve masked_fill masked_scatter masked_select matmul matrix_exp matrix_power max maximum mean
    median min minimum mm mode moveaxis movedim msort mtia mul multinomial multiply mv mvlgamma nan_to_num
    nanmean nanmedian nanquantile nansum narrow narrow_copy ndimension ne neg negative nelement new_empty
    new_full new_ones new_tensor new_zeros nextafter nonzero nonzero_static norm not_equal numel orgqr ormqr
    outer permute pinverse polygamma positive pow prelu prod put q_per_channel_axis q_per_channel_scales
    q_per_channel_zero_points q_scale q_zero_point qr qscheme quantile rad2deg ravel reciprocal relu
    remainder renorm repeat repeat_interleave reshape reshape_as resolve_conj resolve_neg roll rot90 round
    row_indices rsqrt scatter scatter_add scatter_reduce select select_scatter sgn short sigmoid sign
    signbit sin sinc sinh size slice_scatter slogdet smm softmax solve sort sparse_dim sparse_mask split
    split_with_sizes sqrt square squeeze sspaddmm std stft sub subtract sum sum_to_size svd swapaxes
    swapdims symeig t take take_along_dim tan tanh tensor_split tile to to_dense to_mkldnn to_padded_tensor
    to_sparse to_sparse_bsc to_sparse_bsr to_sparse_coo to_sparse_csc to_sparse_csr topk trace transpose
    triangular_solve tril triu true_divide trunc type type_as unbind unflatten unfold unique
    unique_consecutive unsqueeze values var vdot view view_as vsplit where xlogy xpu    """
)
"""The tensor methods a spec may name (``x.flatten()``: ``{"method": "flatten"}``)."""
