"""The events table's numpy helpers hold to what numpy and pandas would give, near misses
included: `inverse` is np.unique with its inverse, `as_objects` a column's values, and
`parse_details` reads a categorical's texts and only the typed fields it is asked for."""
import numpy as np
import pandas as pd
import pyarrow as pa

from rdzv_sim.trace.columns import as_objects, inverse
from rdzv_sim.trace.details import parse_details, round_facts


def test_inverse_is_numpys_unique_with_its_inverse():
    rng = np.random.default_rng(3)
    for values in (rng.integers(0, 50, 1000),                 # a small range: marks, no sort
                   rng.integers(0, 10 ** 9, 1000),            # a wide one: np.unique itself
                   np.array([7, 7, 7]), np.zeros(0, np.int64)):
        seen, at = inverse(values)
        want_seen, want_at = np.unique(values, return_inverse=True)
        assert seen.tolist() == want_seen.tolist() and at.tolist() == want_at.tolist()
        assert (seen[at] == values).all()


def test_as_objects_of_a_categorical_is_its_values():
    col = pd.Series(pd.Categorical(["b", None, "a", "b"], categories=["a", "b", "unused"]))
    assert as_objects(col).tolist() == ["b", None, "a", "b"]
    assert as_objects(col.iloc[[1]]).tolist() == [None]
    assert as_objects(pd.Series(["x", None], dtype=object)).tolist() == ["x", None]


def test_parse_details_of_a_categorical_and_of_text_agree():
    texts = ['{"a":1,"b":"x"}', "", '{"a":2}', '{"a":1,"b":"x"}', '{"c":[1]}']
    mask = np.array([True, True, True, True, False])
    cat = pd.Series(pd.Categorical(texts))
    plain = pd.Series(texts, dtype=object)
    for col in (cat, plain):
        got = parse_details(col, mask, ("a", "b"))
        assert np.array_equal(got["a"], [1, np.nan, 2, 1], equal_nan=True)
        assert list(got["b"]) == ["x", None, None, "x"]


def test_typed_fields_are_the_only_ones_read():
    """A round_closed row's other fields (its member list) are not read; without `types`,
    Arrow infers every field, and rows whose same field differs in type are refused."""
    texts = pd.Series(['{"digest":"d","members":["a","b"],"nnodes":2}', '{"digest":"e","members":3}'])
    got = parse_details(texts, np.ones(2, bool), ("digest", "nnodes"),
                        {"digest": pa.string(), "nnodes": pa.int64()})
    assert list(got["digest"]) == ["d", "e"] and np.array_equal(got["nnodes"], [2, np.nan], equal_nan=True)
    try:
        parse_details(texts, np.ones(2, bool), ("digest", "nnodes"))
        raise AssertionError("inferred types should clash")
    except pa.ArrowInvalid:
        pass


def test_round_facts_from_round_closed_rows():
    ev = pd.DataFrame({"event": ["round_closed", "join", "round_closed"], "round": pd.array([0, 1, 1], "Int32"),
                       "detail": pd.Categorical(['{"digest":"d","master":"a","members":["a"],"nnodes":1}',
                                                 '{"slot":1}', '{"count":2,"members":["a","b"]}'])})
    assert round_facts(ev) == {0: {"digest": "d", "master": "a", "nnodes": 1}}
