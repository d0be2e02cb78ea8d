"""What the examples of fields (clip_train.py, detection.py, segmentation.py)
share: their command line and the loop of steps that runs epoch after epoch."""
import argparse


def arguments(doc, records, steps, check, out_required=True):
    """The examples' options; `doc` the example's docstring, the rest defaults and help."""
    p = argparse.ArgumentParser(description=doc.split("\n")[0])
    p.add_argument("--out", required=out_required,
                   help="folder for the dataset the example writes (made if missing)")
    p.add_argument("--records", type=int, default=records)
    p.add_argument("--steps", type=int, default=steps, help="batches to read")
    p.add_argument("--batch-size", type=int, default=32)
    p.add_argument("--threads", type=int, default=2, help="reader transform threads")
    p.add_argument("--check", action="store_true", help=check)
    return p


def batches(reader, steps):
    """Yields (step, epoch, batch) for steps 1 to `steps`, epoch after epoch. A
    batch's arrays view the reader's ring slot: they stay valid until the next one."""
    step, epoch = 0, 0
    while True:
        reader.set_epoch(epoch)  # the epoch seeds the shuffle and the crops
        for batch in reader:
            step += 1
            yield step, epoch, batch
            if step == steps:
                return
        epoch += 1
