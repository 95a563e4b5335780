"""ResultBatch: deterministic ids, and records whose `id` is always the result id."""

from streamshift_engine.events.results import ResultBatch, results_from_mapping


def _join_like() -> ResultBatch:
    return results_from_mapping(
        "q1",
        {
            "partition": [0, 1],
            "window_start": [-1, -1],
            "window_end": [-1, -1],
            "min_ts": [1, 2],
            "max_ts": [3, 4],
            "keys": {"id": ["S@0:1*T@0:2", "S@1:5*T@1:6"]},
            "values": {"m": [10, 20]},
        },
    )


def test_ids_join_query_window_and_key() -> None:
    assert _join_like().ids() == ["q1|-1|-1|S@0:1*T@0:2", "q1|-1|-1|S@1:5*T@1:6"]


def test_records_keep_the_result_id_when_a_key_column_is_called_id() -> None:
    records = _join_like().to_records()
    assert records == [
        {"id": "q1|-1|-1|S@0:1*T@0:2", "window_start": -1, "window_end": -1, "m": 10},
        {"id": "q1|-1|-1|S@1:5*T@1:6", "window_start": -1, "window_end": -1, "m": 20},
    ]


def test_take_and_concat_keep_rows_aligned() -> None:
    batch = _join_like()
    both = ResultBatch.concat([batch.take([1]), batch.take([0])])
    assert [r["m"] for r in both.rows()] == [20, 10]
    assert both.ids() == list(reversed(batch.ids()))
