"""Test-wide options. ``--backend`` selects the backend(s) of the conformance suite
(tests/conformance); it is registered here so ``pytest tests --backend=NAME`` works too."""


def pytest_addoption(parser):
    parser.addoption(
        "--backend",
        action="store",
        default="numpy",
        help="conformance backend: python, numpy, wgpu, autodiff-X, a comma list, or all",
    )
