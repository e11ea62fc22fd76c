import pickle

import pytest

import keep_sdk
from keep_sdk import errors


def test_one_tree_under_keep_error() -> None:
    for name in errors.__all__:
        obj = getattr(errors, name)
        if isinstance(obj, type) and issubclass(obj, BaseException):
            assert issubclass(obj, keep_sdk.KeepError), name


def test_tree_in_docstring_names_every_exception() -> None:
    doc = errors.__doc__ or ""
    for name in errors.__all__:
        obj = getattr(errors, name)
        if isinstance(obj, type) and issubclass(obj, BaseException):
            assert name in doc, f"{name} is missing from the tree drawn in errors.py"


@pytest.mark.parametrize(
    ("child", "parent"),
    [
        (keep_sdk.PhaseViolation, keep_sdk.LogicError),
        (keep_sdk.LimitExceeded, keep_sdk.LogicError),
        (keep_sdk.UnknownConnector, keep_sdk.UnknownOperation),
        (keep_sdk.InvalidArguments, keep_sdk.LogicError),
        (keep_sdk.UncertainOutcome, keep_sdk.ConnectorError),
        (keep_sdk.EventNotPending, keep_sdk.StoreConflict),
        (keep_sdk.ActiveRunExists, keep_sdk.StoreConflict),
        (keep_sdk.LeaseLost, keep_sdk.StoreConflict),
        (keep_sdk.NotFound, LookupError),
    ],
)
def test_classification(child: type, parent: type) -> None:
    assert issubclass(child, parent)


def test_logic_error_names_its_location() -> None:
    loc = keep_sdk.ScriptLocation(line=12, column=5, handler="processEmail", phase="mutate")
    exc = keep_sdk.LogicError("code after the mutation", location=loc)
    assert str(exc) == "code after the mutation (at <script>:12:5 in processEmail.mutate)"


def test_errors_render_under_the_public_module_and_pickle() -> None:
    exc = keep_sdk.TransientError("slow down", retry_after=3.0)
    assert repr(type(exc)) == "<class 'keep_sdk.TransientError'>"
    clone = pickle.loads(pickle.dumps(exc))
    assert isinstance(clone, keep_sdk.TransientError)
    assert str(clone) == "slow down"
