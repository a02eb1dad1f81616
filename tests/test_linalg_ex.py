"""linalg.*_ex: info reports failures instead of raising (torch's LAPACK info), check_errors raises."""

import numpy as np
import pytest
import torch

import ember


def test_cholesky_ex_info_matches_torch():
    batch = np.array([[[4.0, 2.0], [2.0, 3.0]], [[1.0, 2.0], [2.0, 1.0]]])
    L, info = ember.linalg.cholesky_ex(ember.tensor(batch))
    expected_L, expected_info = torch.linalg.cholesky_ex(torch.tensor(batch))
    assert info.tolist() == expected_info.tolist() and info.dtype == ember.int32
    np.testing.assert_allclose(L[0].numpy(), expected_L[0].numpy())  # L of a failed matrix is undefined
    diagonal = np.diag([1.0, 2.0, -1.0])
    assert ember.linalg.cholesky_ex(ember.tensor(diagonal)).info.item() == 3
    with pytest.raises(ember.linalg.LinAlgError, match="not positive-definite"):
        ember.linalg.cholesky_ex(ember.tensor(batch), check_errors=True)


def test_cholesky_ex_gradient_where_it_succeeds():
    A = ember.tensor([[4.0, 2.0], [2.0, 3.0]], dtype=ember.float64, requires_grad=True)
    ember.linalg.cholesky_ex(A).L.sum().backward()
    B = torch.tensor([[4.0, 2.0], [2.0, 3.0]], dtype=torch.float64, requires_grad=True)
    torch.linalg.cholesky_ex(B).L.sum().backward()
    np.testing.assert_allclose(A.grad.numpy(), B.grad.numpy(), rtol=1e-12)
