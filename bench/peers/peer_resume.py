"""The exact-resume row of bench/peers/peer_bench.py: does a loader rebuilt
from a state_dict() taken after K batches deliver the batches an
uninterrupted run delivers next, label for label and pixel for pixel?

  peer_bench.py child-resume PEER KIND OUT_DIR BATCH_SIZE WORKERS SEED

Three loaders of the same settings: A runs K + M batches of epoch 0
uninterrupted; B runs K batches and gives its state_dict(); C is made fresh,
load_state_dict(B's state), and runs M batches. The row is "exact" when C's M
batches equal A's batches K..K+M-1: labels and pixels. shardpack's
augmentation is part of its state; the numpy augmentation of the other
modules draws, for this check only, from a generator seeded by each image's
bytes (peer_api.DETERMINISTIC_AUGMENT), so their pixels are comparable too.
A loader with no state_dict() is "no state_dict".
"""

import hashlib
import json
import os

RESUME_AFTER = 5   # K
COMPARE = 5        # M


def _batches(loader, n):
    """The first n batches of an epoch of `loader`: (labels list, pixel digest)."""
    import numpy as np
    out = []
    it = iter(loader)
    for _ in range(n):
        images, labels = next(it)[:2]  # a caption batch's captions follow
        x = images.numpy() if hasattr(images, "numpy") else np.asarray(images)
        y = labels.numpy() if hasattr(labels, "numpy") else np.asarray(labels)
        out.append((y.astype(np.int64).reshape(-1).tolist(),
                    hashlib.sha1(np.ascontiguousarray(x).tobytes()).hexdigest()))
    return out, it


def resume_check(peer, kind, out_dir, batch_size, workers, seed):
    import peer_api
    os.environ[peer_api.DETERMINISTIC_ENV] = "1"  # for the workers a peer spawns
    peer_api.DETERMINISTIC_AUGMENT = True
    make = lambda: peer.loader(kind, out_dir, batch_size, workers, seed)  # noqa: E731
    try:
        reference, _ = _batches(make(), RESUME_AFTER + COMPARE)
    except StopIteration:
        return {"resume": f"not checked: an epoch has fewer than {RESUME_AFTER + COMPARE} "
                          "batches"}
    b = make()
    if not hasattr(b, "state_dict") or not hasattr(b, "load_state_dict"):
        return {"resume": "no state_dict", "detail": f"{type(b).__name__} has no state_dict()"}
    _, it = _batches(b, RESUME_AFTER)
    state = b.state_dict()
    del it
    c = make()
    c.load_state_dict(state)
    resumed, _ = _batches(c, COMPARE)
    want = reference[RESUME_AFTER:]
    labels_equal = [r[0] for r in resumed] == [w[0] for w in want]
    pixels_equal = [r[1] for r in resumed] == [w[1] for w in want]
    if labels_equal and pixels_equal:
        verdict = "exact (labels and pixels)"
    elif labels_equal:
        verdict = "NOT exact: the labels match, the pixels do not"
    else:
        same = sum(a == b for r, w in zip(resumed, want) for a, b in zip(r[0], w[0]))
        verdict = f"NOT exact: {same} of {COMPARE * batch_size} labels match"
    return {"resume": verdict, "resumed_after": RESUME_AFTER, "compared": COMPARE,
            "state_json_bytes": len(json.dumps(state, default=str))}
