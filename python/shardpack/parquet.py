"""shardpack parquet: Parquet files (as Hugging Face `datasets` publishes them) to a dataset.

    shardpack parquet train-*.parquet -o out [--field image=raw] [--drop id] [--format lmdb]
    python -m shardpack.parquet ...        (the same, where `shardpack` is a source build's)

Each column becomes a field of the same name, its type told by the column's
Arrow type and the file's Hugging Face features (docs/python.md, "Parquet"):

    struct<bytes, path> (datasets' Image)   -> "jpeg" (JPEG bytes kept; other
                                               formats converted as
                                               `shardpack images` converts them)
    ClassLabel (int, with names)            -> "label" with its class names
    integers, bool                          -> "label"
    float16/32/64                           -> "f16[1]" / "f32[1]" / "f64[1]"
    string, large_string                    -> "string"
    binary, large_binary                    -> "bytes"
    list<float|int> / fixed_size_list       -> "<dtype>[n]" / "<dtype>[k]"
    list<fixed_size_list<k>>                -> "<dtype>[n,k]" (boxes)

A column holding nulls makes an optional field ("?"); a null is an absent
value. `--field NAME=TYPE` overrides a column's type (any type text of
shardpack.Writer), `--drop NAME` leaves a column out; any other column type
(a map, a timestamp, a decimal, a struct that is not an image) is refused
naming it. Needs pyarrow (pip install 'shardpack[parquet]': pyarrow >= 14; the tests
pin the version they run, tests/python/requirements-torch.txt).
"""
import argparse
import json
import os
import sys

__all__ = ["convert", "infer_schema", "main"]

_INT_TYPES = ("int8", "int16", "int32", "int64", "uint8", "uint16", "uint32", "bool")
_FLOAT_DTYPES = {"halffloat": "f16", "float": "f32", "double": "f64",
                 "float16": "f16", "float32": "f32", "float64": "f64"}
_ARRAY_DTYPES = dict(_FLOAT_DTYPES, int32="i32", int64="i64", uint8="u8")


class ParquetError(ValueError):
    """A Parquet input this converter cannot take: the message names the file and column."""


def _pyarrow():
    try:
        import pyarrow.parquet as pq
    except ImportError:
        raise ParquetError("shardpack parquet needs pyarrow: pip install 'shardpack[parquet]'") from None
    return pq


def _hf_features(schema):
    """The Hugging Face features stored in a Parquet file's metadata, or {}."""
    meta = schema.metadata or {}
    text = meta.get(b"huggingface")
    if not text:
        return {}
    try:
        info = json.loads(text)
    except ValueError:
        return {}
    return (info.get("info") or {}).get("features") or {}


def _array_type(t, name, where):
    import pyarrow as pa
    if pa.types.is_fixed_size_list(t) or pa.types.is_list(t) or pa.types.is_large_list(t):
        inner = t.value_type
        if pa.types.is_fixed_size_list(inner) and str(inner.value_type) in _ARRAY_DTYPES:
            return f"{_ARRAY_DTYPES[str(inner.value_type)]}[n,{inner.list_size}]"
        if str(inner) in _ARRAY_DTYPES:
            first = str(t.list_size) if pa.types.is_fixed_size_list(t) else "n"
            return f"{_ARRAY_DTYPES[str(inner)]}[{first}]"
    raise ParquetError(f"{where}: column '{name}' of type {t} is not supported "
                       f"(--drop {name} leaves it out; --field {name}=TYPE maps it)")


def _column_type(field, features, where):
    """The Writer type text of one Arrow column, and its class names (or None)."""
    import pyarrow as pa
    t, name = field.type, field.name
    feature = features.get(name) or {}
    kind = feature.get("_type")
    if kind == "Image" or (pa.types.is_struct(t) and t.get_field_index("bytes") >= 0
                           and t.get_field_index("path") >= 0):
        return "jpeg", None
    if kind == "ClassLabel":
        return "label", list(feature.get("names") or [])
    if str(t) in _INT_TYPES:
        return "label", None
    if str(t) in _FLOAT_DTYPES:
        return f"{_FLOAT_DTYPES[str(t)]}[1]", None
    if pa.types.is_string(t) or pa.types.is_large_string(t):
        return "string", None
    if pa.types.is_binary(t) or pa.types.is_large_binary(t):
        return "bytes", None
    return _array_type(t, name, where), None


def _nulls(meta, name):
    """Nulls in the column `name`, from the row groups' statistics: a nested column (an
    image struct) counts those of its leaves, which its nulls are nulls of too."""
    total = 0
    for g in range(meta.num_row_groups):
        group = meta.row_group(g)
        for j in range(group.num_columns):
            c = group.column(j)
            if c.path_in_schema == name or c.path_in_schema.startswith(name + "."):
                stats = c.statistics
                total += stats.null_count if stats is not None and stats.has_null_count else 0
                break
    return total


def infer_schema(path, overrides=None, drop=()):
    """(schema, classes) of shardpack.Writer for the Parquet file `path`."""
    pq = _pyarrow()
    f = pq.ParquetFile(path)
    arrow = f.schema_arrow
    features = _hf_features(arrow)
    overrides = dict(overrides or {})
    for name in list(overrides) + list(drop):
        if arrow.get_field_index(name) < 0:
            raise ParquetError(f"{path}: no column '{name}' (columns: {', '.join(arrow.names)})")
    schema, classes = {}, {}
    meta = f.metadata
    for field in arrow:
        if field.name in drop or field.name == "__key__":
            continue
        if field.name in overrides:
            text, names = overrides[field.name], None
        else:
            text, names = _column_type(field, features, path)
        nulls = _nulls(meta, field.name)
        if nulls and not text.endswith("?"):
            text += "?"
        schema[field.name] = text
        if names:
            classes[field.name] = names
    return schema, classes


def _converter(text):
    """A function from a Parquet cell to what shardpack.Writer takes for a field of `text`."""
    base = text.rstrip("?")
    if base in ("jpeg", "raw") or base.startswith("raw:"):
        def image(v):
            if isinstance(v, dict):
                if v.get("bytes") is None:
                    raise ParquetError(f"an image with no bytes (path {v.get('path')!r}): only "
                                       f"images stored in the file are converted")
                return v["bytes"]
            return v
        return image
    if base == "label":
        return int
    if "[" in base:
        import numpy as np
        dtype, dims = base[:-1].split("[")
        dims = dims.split(",")
        shape = [-1 if dims[0] == "n" else int(dims[0])] + [int(d) for d in dims[1:]]
        np_dtype = {"u8": np.uint8, "i32": np.int32, "i64": np.int64, "f16": np.float16,
                    "f32": np.float32, "f64": np.float64}[dtype]
        return lambda v: np.asarray(v, dtype=np_dtype).reshape(shape)
    return lambda v: v


def convert(inputs, out, overrides=None, drop=(), batch_rows=1024, **writer_options):
    """Writes the rows of the Parquet files `inputs`, in order, as the dataset `out`.

    The schema is the first file's; every other file must have the same.
    writer_options go to shardpack.Writer (format, overwrite, on_error, ...).
    Returns the number of records written.
    """
    import shardpack
    pq = _pyarrow()
    if not inputs:
        raise ParquetError("no Parquet files given")
    schema, classes = infer_schema(inputs[0], overrides, drop)
    written = 0
    metadata = writer_options.pop("metadata", None) or {}
    metadata = dict(metadata, source={"kind": "parquet",
                                      "files": [os.path.basename(p) for p in inputs]})
    with shardpack.Writer(out, schema, classes=classes, metadata=metadata,
                          **writer_options) as w:
        for path in inputs:
            other, _ = infer_schema(path, overrides, drop)
            if [k for k in other] != [k for k in schema] or any(
                    other[k].rstrip("?") != schema[k].rstrip("?") for k in schema):
                raise ParquetError(f"{path}: columns {other} differ from {inputs[0]}'s {schema}")
            stem = os.path.splitext(os.path.basename(path))[0]
            f = pq.ParquetFile(path)
            columns = list(schema) + (["__key__"] if "__key__" in f.schema_arrow.names else [])
            convert_cell = {k: _converter(t) for k, t in schema.items()}
            row = 0
            for batch in f.iter_batches(batch_size=batch_rows, columns=columns):
                for record in batch.to_pylist():
                    sample = {k: convert_cell[k](record[k]) for k in schema
                              if record[k] is not None}
                    sample["__key__"] = str(record.get("__key__") or f"{stem}/{row:08d}")
                    w.write(sample)
                    row += 1
                    written += 1
    return written


def _pairs(values, flag):
    out = {}
    for v in values or ():
        name, sep, text = v.partition("=")
        if not sep or not name or not text:
            raise ParquetError(f"{flag} {v!r}: expected NAME=TYPE")
        out[name] = text
    return out


def main(argv=None):
    p = argparse.ArgumentParser(prog="shardpack parquet",
                                description="Pack Parquet files (Hugging Face datasets' layout) "
                                            "into a dataset of named fields")
    p.add_argument("inputs", nargs="+", help="Parquet files, in record order")
    p.add_argument("-o", "--output", required=True, help="the dataset folder to write")
    p.add_argument("--field", action="append", metavar="NAME=TYPE",
                   help="a column's field type (shardpack.Writer's type text)")
    p.add_argument("--drop", action="append", default=[], metavar="NAME", help="leave a column out")
    p.add_argument("--format", default="shard", choices=["shard", "lmdb", "hdf5"])
    p.add_argument("--overwrite", action="store_true", help="replace a dataset shardpack wrote")
    p.add_argument("--on-error", default="fail", choices=["fail", "skip"])
    p.add_argument("-q", "--quiet", action="store_true")
    args = p.parse_args(argv)
    try:
        n = convert(args.inputs, args.output, overrides=_pairs(args.field, "--field"),
                    drop=args.drop, format=args.format, overwrite=args.overwrite,
                    on_error=args.on_error)
    except (ParquetError, OSError) as e:
        sys.stderr.write(f"shardpack: {e}\n")
        return 1
    except Exception as e:  # shardpack.Error and the Writer's argument errors
        if type(e).__module__ == "shardpack" or isinstance(e, (ValueError, TypeError)):
            sys.stderr.write(f"shardpack: {e}\n")
            return 1
        raise
    if not args.quiet:
        sys.stderr.write(f"shardpack: wrote {n} records to {args.output}\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
