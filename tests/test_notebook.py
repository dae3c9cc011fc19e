"""Notebooks as virtual modules: which cells, IPython magics masked and restored, exact write-back."""

from __future__ import annotations

import ast
import copy
import json

import libcst as cst
import pytest

from neuronize.sources.notebook import NotebookError, read_cells, write_cells

PNG = (
    "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mNk+M9QDwADhgGAWjR9awAAAABJRU5ErkJggg=="
)


def lines(text: str) -> list[str]:
    """A cell source as Jupyter stores it: lines keeping their "\\n", the last one without."""
    return text.splitlines(keepends=True)


def code(text: str, count: int | None = None, outputs: list | None = None, as_string: bool = False) -> dict:
    return {
        "cell_type": "code",
        "execution_count": count,
        "id": f"c{abs(hash(text)) % 10**8:08d}",
        "metadata": {},
        "outputs": outputs or [],
        "source": text if as_string else lines(text),
    }


def markdown(text: str) -> dict:
    return {"cell_type": "markdown", "id": f"m{abs(hash(text)) % 10**8:08d}", "metadata": {}, "source": lines(text)}


def notebook(*cells: dict, language: str | None = "python") -> dict:
    metadata: dict = {}
    if language is not None:
        metadata = {
            "kernelspec": {"display_name": f"{language} 3", "language": language, "name": f"{language}3"},
            "language_info": {
                "codemirror_mode": {"name": "ipython", "version": 3},
                "file_extension": ".py",
                "mimetype": "text/x-python",
                "name": language,
                "nbconvert_exporter": "python",
                "pygments_lexer": "ipython3",
                "version": "3.11.7",
            },
        }
    return {"cells": list(cells), "metadata": metadata, "nbformat": 4, "nbformat_minor": 5}


def jupyter_bytes(nb: dict) -> bytes:
    """Exactly what Jupyter (nbformat) writes."""
    return (json.dumps(nb, sort_keys=True, indent=1, ensure_ascii=False, separators=(",", ": ")) + "\n").encode()


TRAINING = """import torch
import torch.nn as nn
from torchvision import models

device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
model = models.resnet18(weights=None)
model = model.cuda()
criterion = nn.CrossEntropyLoss().cuda()"""

PLOT = """%matplotlib inline
import matplotlib.pyplot as plt

losses = [2.3, 1.7, 1.2, 0.9]
plt.plot(losses)  # loss curve \u2014 should go down
plt.title("Entra\u00eenement")"""

LOOP = """%%time
for epoch in range(3):
    for x, y in loader:
        x, y = x.cuda(non_blocking=True), y.cuda(non_blocking=True)
        loss = criterion(model(x), y)
        loss.backward()
    !nvidia-smi --query-gpu=memory.used --format=csv
print(f"done \U0001f389 {loss.item():.3f}")
"""


def realistic() -> dict:
    return notebook(
        markdown("# Fine-tuning ResNet-18 \U0001f680\n\nTrain on the GPU, then plot the loss."),
        code("!pip install -q torch torchvision\n%load_ext autoreload\n%autoreload 2", 1, [
            {"name": "stdout", "output_type": "stream", "text": ["Successfully installed torch-2.3.0\n"]},
        ]),
        code(TRAINING, 2),
        code(PLOT, 3, [
            {"data": {"image/png": PNG, "text/plain": ["<Figure size 640x480 with 1 Axes>"]},
             "metadata": {"needs_background": "light"}, "output_type": "display_data"},
        ]),
        {"cell_type": "raw", "id": "r0000001", "metadata": {}, "source": ["model.cuda()  # raw cells are not code"]},
        code("%%bash\nnvidia-smi\necho model.cuda()", 4),
        code(LOOP, 5, [{"name": "stdout", "output_type": "stream", "text": ["CPU times: user 1.2 s\n"]}]),
        code("", None),
        code("torch.save(model.state_dict(), 'model.pt')\nmodel?", 6, as_string=True),
    )


def by_index(data: bytes) -> dict[int, bytes]:
    return {cell.index: cell.source for cell in read_cells(data)}


def replace_in(data: bytes, index: int, old: bytes, new: bytes) -> bytes:
    cells = by_index(data)
    assert old in cells[index]
    return write_cells(data, {index: cells[index].replace(old, new)})


# --- which cells -----------------------------------------------------------------------------------


def test_code_cells_of_a_realistic_notebook():
    cells = read_cells(jupyter_bytes(realistic()))
    # 1 markdown, 5 raw and 6 %%bash are not Python; indices count every cell, as users do.
    assert [cell.index for cell in cells] == [2, 3, 4, 7, 8, 9]
    sources = {cell.index: cell.source.decode() for cell in cells}
    assert sources[3] == TRAINING + "\n"
    assert sources[8] == ""
    for cell in cells:
        ast.parse(cell.source)
        cst.parse_module(cell.source.decode())
        original = "".join(realistic()["cells"][cell.index - 1]["source"])
        assert cell.source.decode().count("\n") == len(original.splitlines()), "cell line N is module line N"


def test_sources_are_utf8_and_end_with_a_newline():
    cells = by_index(jupyter_bytes(realistic()))
    assert cells[4].endswith(b'plt.title("Entra\xc3\xaenement")\n')
    assert "\U0001f389".encode() in cells[7]
    assert cells[9].endswith(b"\n")


@pytest.mark.parametrize("language", ["R", "julia", "scala", "javascript"])
def test_non_python_kernels_have_no_cells(language):
    assert read_cells(jupyter_bytes(notebook(code("x <- 1\nmodel.cuda()"), language=language))) == []


def test_language_info_alone_decides_too():
    nb = notebook(code("model.cuda()"), language=None)
    nb["metadata"] = {"language_info": {"name": "R"}}
    assert read_cells(jupyter_bytes(nb)) == []


def test_unspecified_language_is_python():
    nb = notebook(code("model.cuda()"), language=None)
    assert read_cells(jupyter_bytes(nb)) == [read_cells(jupyter_bytes(notebook(code("model.cuda()"))))[0]]
    del nb["metadata"]
    assert [cell.source for cell in read_cells(jupyter_bytes(nb))] == [b"model.cuda()\n"]


def test_vscode_cells_in_another_language_are_skipped():
    sql = code("SELECT * FROM runs")
    sql["metadata"] = {"vscode": {"languageId": "sql"}}
    py = code("model.cuda()")
    py["metadata"] = {"vscode": {"languageId": "python"}}
    assert [cell.index for cell in read_cells(jupyter_bytes(notebook(sql, py)))] == [2]


@pytest.mark.parametrize(
    "first",
    ["%%bash", "%%sh", "%%writefile -a train.py", "%%writefile notes.txt", "%%html", "%%javascript", "%%js",
     "%%script bash", "%%latex", "%%markdown", "%%sql sqlite://", "%%cython", "%%perl", "%%ruby", "%%svg",
     "%%file x.yaml", "%%"],
)
def test_non_python_cell_magics_skip_the_cell(first):
    nb = notebook(
        code(f"{first}\nimport torch\nmodel = model.cuda()\n"),
        code("\n  \n" + first + "\nx.cuda()"),
        code(f"%%capture out\n{first}\nx.cuda()"),
    )
    assert read_cells(jupyter_bytes(nb)) == []


@pytest.mark.parametrize("first", ["%%writefile train.py", "%%file 'serve.py'", "%%capture out\n%%writefile train.py"])
def test_a_cell_that_writes_a_python_file_is_that_file(first):
    nb = notebook(code("import torch"), code(f"{first}\nimport torch\nmodel = model.cuda()\n"), code("x.cuda()"))
    cells = read_cells(jupyter_bytes(nb))
    assert [(cell.index, cell.script) for cell in cells] == [(1, False), (2, True), (3, False)]
    assert cells[1].source.decode().endswith("import torch\nmodel = model.cuda()\n")


@pytest.mark.parametrize("first", ["%%time", "%%timeit -n 3 -r 1", "%%capture captured", "%%prun -s cumulative"])
def test_python_cell_magics_mask_only_their_line(first):
    data = jupyter_bytes(notebook(code(f"{first}\nout = model.cuda()(batch)")))
    (cell,) = read_cells(data)
    head, body = cell.source.decode().split("\n", 1)
    assert head.isidentifier() and "%" not in head
    assert body == "out = model.cuda()(batch)\n"
    changed = write_cells(data, {1: cell.source.replace(b".cuda()", b'.to("neuron")')})
    assert json.loads(changed)["cells"][0]["source"] == [f"{first}\n", 'out = model.to("neuron")(batch)']


# --- masking ---------------------------------------------------------------------------------------

MAGIC_LINES = [
    "%matplotlib inline",
    "%load_ext autoreload",
    "%env CUDA_VISIBLE_DEVICES=0",
    "!pip install -q transformers",
    "!!nvidia-smi",
    "files = !ls *.csv",
    "gpus = !nvidia-smi -L",
    "t = %timeit -o model(x)",
    "x['a'] = %who_ls",
    "model?",
    "torch.nn.Linear??",
    "?torch.cuda",
    "??model.forward",
    "%time y = model(x.cuda())",
    "%%time",  # not on the first line: IPython reads it as a line magic
    ",print a b",
    ";print a b",
    "/print a",
    "%pip install torch  # with a comment",
]


@pytest.mark.parametrize("magic", MAGIC_LINES)
@pytest.mark.parametrize("indent", ["", "    ", "\t"])
def test_magic_lines_are_masked_and_restored(magic, indent):
    text = f"import torch\nif True:\n{indent or '    '}pass\n{indent}{magic}\nmodel = model.cuda()"
    if indent:
        text = f"import torch\nfor i in range(2):\n{indent}model = model.cuda()\n{indent}{magic}\n{indent}print(i)"
    data = jupyter_bytes(notebook(code(text)))
    (cell,) = read_cells(data)
    source = cell.source.decode()
    masked = source.splitlines()[3]
    assert masked.startswith(indent) and masked[len(indent):].isidentifier()
    assert magic not in source
    ast.parse(source)
    changed = write_cells(data, {1: cell.source.replace(b"model.cuda()", b'model.to("neuron")')})
    assert "".join(json.loads(changed)["cells"][0]["source"]) == text.replace("model.cuda()", 'model.to("neuron")')


@pytest.mark.parametrize(
    "text",
    [
        "y = x != 3  # what?",
        'print("huh?")',
        "s = 'why?'",
        "a = b % c",
        "ok = a == b",
        "z = (a\n     / b)",
        "z = [1,\n     2]",
        'doc = """\n!not a shell escape\n%not a magic\nnor help?\n"""',
        "f(x=1, y='!')",
        "d = {'k': '%d' % 3}",
        "x += 1",
        "c = a if b else d  # ok?",
        "s = 'line \\\n!continued'",
        "path = r'C:\\temp'  # raw?",
    ],
)
def test_python_lookalikes_are_left_alone(text):
    (cell,) = read_cells(jupyter_bytes(notebook(code(text))))
    assert cell.source.decode() == text + "\n"


def test_backslash_continued_magic_is_masked_line_by_line():
    text = "!pip install torch \\\n    torchvision \\\n    numpy\nimport torch\nm = Net().cuda()"
    data = jupyter_bytes(notebook(code(text)))
    (cell,) = read_cells(data)
    masked = cell.source.decode().splitlines()
    assert all(line.isidentifier() for line in masked[:3]) and len(set(masked[:3])) == 3
    assert masked[3:] == ["import torch", "m = Net().cuda()"]
    changed = replace_in(data, 1, b".cuda()", b'.to("neuron")')
    assert "".join(json.loads(changed)["cells"][0]["source"]) == text.replace(".cuda()", '.to("neuron")')


def test_multiline_help_is_masked_as_a_whole():
    text = "torch.nn.functional.interpolate(\n    x)?\nmodel.cuda()"
    (cell,) = read_cells(jupyter_bytes(notebook(code(text))))
    masked = cell.source.decode().splitlines()
    assert all(line.isidentifier() for line in masked[:2])
    assert masked[2] == "model.cuda()"


def test_magics_survive_deleted_and_added_neighbours():
    text = "%matplotlib inline\ntorch.cuda.synchronize()\n!nvidia-smi\ntorch.cuda.empty_cache()\nx = 1"
    data = jupyter_bytes(notebook(code(text)))
    (cell,) = read_cells(data)
    kept = [line for line in cell.source.decode().splitlines(keepends=True) if not line.startswith("torch.cuda")]
    new = "import torch_neuronx\n" + "".join(kept)
    changed = write_cells(data, {1: new.encode()})
    assert json.loads(changed)["cells"][0]["source"] == [
        "import torch_neuronx\n", "%matplotlib inline\n", "!nvidia-smi\n", "x = 1"]


def test_reindented_magic_follows_its_block():
    text = "model.cuda()\n%time train(model)"
    data = jupyter_bytes(notebook(code(text)))
    (cell,) = read_cells(data)
    first, second = cell.source.decode().splitlines()
    new = f"with neuron_context():\n    model.to('neuron')\n    {second}\n"
    changed = write_cells(data, {1: new.encode()})
    assert "".join(json.loads(changed)["cells"][0]["source"]) == (
        "with neuron_context():\n    model.to('neuron')\n    %time train(model)")


def test_placeholder_cannot_collide_with_user_code():
    text = "__neuronize_magic_1__ = 'mine'\n%matplotlib inline\nprint(__neuronize_magic_1__)"
    data = jupyter_bytes(notebook(code(text)))
    (cell,) = read_cells(data)
    masked = cell.source.decode().splitlines()
    assert masked[0] == "__neuronize_magic_1__ = 'mine'" and masked[2] == "print(__neuronize_magic_1__)"
    assert masked[1].isidentifier() and masked[1] != "__neuronize_magic_1__"
    changed = write_cells(data, {1: cell.source.replace(b"'mine'", b"'ours'")})
    assert "".join(json.loads(changed)["cells"][0]["source"]) == text.replace("'mine'", "'ours'")


def test_a_lost_magic_refuses_the_write():
    data = jupyter_bytes(notebook(code("%matplotlib inline\nmodel.cuda()")))
    (cell,) = read_cells(data)
    with pytest.raises(NotebookError, match="%matplotlib inline"):
        write_cells(data, {1: b"model.to('neuron')\n"})


def test_a_duplicated_or_moved_placeholder_refuses_the_write():
    data = jupyter_bytes(notebook(code("!nvidia-smi\nmodel.cuda()")))
    (cell,) = read_cells(data)
    placeholder = cell.source.splitlines()[0]
    with pytest.raises(NotebookError, match="duplicated"):
        write_cells(data, {1: cell.source + placeholder + b"\n"})
    with pytest.raises(NotebookError, match="moved"):
        write_cells(data, {1: b"print(" + placeholder + b")\n"})


# --- writing back ----------------------------------------------------------------------------------

FORMATS = {
    "jupyter": dict(sort_keys=True, indent=1, ensure_ascii=False, separators=(",", ": ")),
    "indent2": dict(indent=2, ensure_ascii=False),
    "indent4": dict(indent=4),
    "indent4-ascii-sorted": dict(indent=4, sort_keys=True, ensure_ascii=True),
    "compact": dict(ensure_ascii=False),
    "minified": dict(separators=(",", ":"), ensure_ascii=True),
}


def dumps(nb: dict, style: str, newline: bool = True) -> bytes:
    return (json.dumps(nb, **FORMATS[style]) + ("\n" if newline else "")).encode()


@pytest.mark.parametrize("newline", [True, False], ids=["final-newline", "no-final-newline"])
@pytest.mark.parametrize("style", FORMATS)
def test_unchanged_cells_round_trip_byte_identically(style, newline):
    data = dumps(realistic(), style, newline)
    assert write_cells(data, by_index(data)) == data
    assert write_cells(data, {}) == data


@pytest.mark.parametrize("style", FORMATS)
def test_a_changed_cell_is_written_as_the_writer_would(style):
    nb = realistic()
    data = dumps(nb, style)
    changed = replace_in(data, 3, b"model = model.cuda()", b'model = model.to("neuron")')
    expected = copy.deepcopy(nb)
    expected["cells"][2]["source"] = lines(TRAINING.replace("model = model.cuda()", 'model = model.to("neuron")'))
    assert changed == dumps(expected, style)


@pytest.mark.parametrize("style", FORMATS)
def test_changing_one_cell_touches_only_its_source(style):
    nb = realistic()
    data = dumps(nb, style)
    changed = replace_in(data, 7, b"x.cuda(non_blocking=True), y.cuda(non_blocking=True)",
                         b'x.to("neuron"), y.to("neuron")')
    before, after = json.loads(data), json.loads(changed)
    assert "".join(after["cells"][6]["source"]) == LOOP.replace(
        "x.cuda(non_blocking=True), y.cuda(non_blocking=True)", 'x.to("neuron"), y.to("neuron")')
    after["cells"][6]["source"] = before["cells"][6]["source"]
    assert after == before
    # The bytes outside the cell's "source" value are untouched.
    head = data.rindex(b'"source"', 0, data.index(b"%%time"))
    tail = data.index(b"]", data.index(b"print(f"))
    assert changed[:head] == data[:head]
    assert changed[len(changed) - (len(data) - tail):] == data[tail:]


@pytest.mark.parametrize("style", FORMATS)
@pytest.mark.parametrize("before", [[], ["model.cuda()"], ["model.cuda()\n"], ["import torch\n", "model.cuda()"]])
def test_cells_growing_from_any_length_follow_the_writer(style, before):
    nb = notebook(code("x = 1"), code(""), markdown("*Done.*"))
    nb["cells"][1]["source"] = before
    after = "import torch_neuronx\nmodel.to('neuron')\nx = 2"
    changed = write_cells(dumps(nb, style), {2: after.encode() + b"\n"})
    nb["cells"][1]["source"] = lines(after + ("\n" if "".join(before).endswith("\n") else ""))
    assert changed == dumps(nb, style)


def test_a_changed_cell_reverts_to_the_original_bytes():
    data = jupyter_bytes(realistic())
    cells = by_index(data)
    for index, source in cells.items():
        edited = write_cells(data, {index: source + b"x = 1\n"})
        assert edited != data
        assert write_cells(edited, {index: source}) == data


def test_string_sources_stay_strings():
    data = jupyter_bytes(realistic())
    changed = replace_in(data, 9, b"torch.save", b"xm.save")
    assert json.loads(changed)["cells"][8]["source"] == "xm.save(model.state_dict(), 'model.pt')\nmodel?"


def test_an_empty_cell_gets_content_in_jupyter_layout():
    nb = realistic()
    data = jupyter_bytes(nb)
    changed = write_cells(data, {8: b"import torch_neuronx\nprint(torch_neuronx.__version__)\n"})
    nb["cells"][7]["source"] = ["import torch_neuronx\n", "print(torch_neuronx.__version__)"]
    assert changed == jupyter_bytes(nb)


def test_emptying_a_cell():
    nb = notebook(code("torch.cuda.synchronize()"), code("x = 1"))
    changed = write_cells(jupyter_bytes(nb), {1: b""})
    nb["cells"][0]["source"] = []
    assert changed == jupyter_bytes(nb)


def test_outputs_execution_counts_and_metadata_are_kept():
    data = jupyter_bytes(realistic())
    changed = write_cells(data, {cell: source.replace(b".cuda()", b'.to("neuron")')
                                 for cell, source in by_index(data).items()})
    before, after = json.loads(data), json.loads(changed)
    assert after["metadata"] == before["metadata"]
    for old, new in zip(before["cells"], after["cells"]):
        assert {k: v for k, v in old.items() if k != "source"} == {k: v for k, v in new.items() if k != "source"}
    assert after["cells"][3]["outputs"][0]["data"]["image/png"] == PNG
    assert before["cells"][4] == after["cells"][4] and before["cells"][5] == after["cells"][5]  # raw, %%bash
    magics = ["!pip install -q torch torchvision\n", "%load_ext autoreload\n", "%autoreload 2"]
    assert after["cells"][1]["source"] == magics


def test_cell_source_ending_with_a_newline_keeps_it():
    nb = notebook(code("model.cuda()\n"))
    data = jupyter_bytes(nb)
    assert nb["cells"][0]["source"] == ["model.cuda()\n"]
    changed = replace_in(data, 1, b"model.cuda()", b"model.to('neuron')")
    assert json.loads(changed)["cells"][0]["source"] == ["model.to('neuron')\n"]


def test_unusual_spelling_elsewhere_is_preserved():
    # A hand-written notebook: escaped slashes and non-ASCII, odd numbers, unsorted keys, tabs, CRLF.
    data = (
        '{"metadata": {"ratio": 1.50, "big": 1E3, "url": "https:\\/\\/example.com\\/\\u00e9"},\r\n'
        '\t"cells": [\r\n'
        '\t\t{"source": ["model.cuda()\\n", "print(\\"caf\\u00e9\\")"], "cell_type": "code",'
        ' "outputs": [], "metadata": {}, "execution_count": null},\r\n'
        '\t\t{"cell_type": "markdown", "source": "caf\\u00e9 \\/ GPU", "metadata": {}}\r\n'
        '\t],\r\n\t"nbformat_minor": 2, "nbformat": 4}'
    ).encode()
    changed = replace_in(data, 1, b"model.cuda()", b"model.to('neuron')")
    start = data.index(b'"model.cuda()')
    end = data.index(b"]", start)
    assert changed[:start] == data[:start]
    assert changed[len(changed) - (len(data) - end):] == data[end:]
    # The unchanged line keeps its original \u00e9 escape; the new one follows the ASCII style.
    assert changed[start:len(changed) - (len(data) - end)] == b'"model.to(\'neuron\')\\n", "print(\\"caf\\u00e9\\")"'


def test_ensure_ascii_follows_the_file():
    jupyter = jupyter_bytes(notebook(code("x = 1"), markdown("caf\u00e9")))
    escaped = dumps(notebook(code("x = 1"), markdown("caf\u00e9")), "indent4")
    new = "s = 'na\u00efve \u2014 \U0001f680'\n".encode()
    assert "na\u00efve \u2014 \U0001f680".encode() in write_cells(jupyter, {1: new})
    assert b"na\\u00efve \\u2014 \\ud83d\\ude80" in write_cells(escaped, {1: new})


def test_bom_and_crlf_inside_a_cell_survive():
    nb = notebook(code("import torch\r\nm = Net().cuda()\r\n%matplotlib inline\r\nprint(m)"))
    data = b"\xef\xbb\xbf" + jupyter_bytes(nb)
    (cell,) = read_cells(data)
    assert cell.source.decode().splitlines(keepends=True)[1] == "m = Net().cuda()\r\n"
    assert write_cells(data, by_index(data)) == data
    changed = replace_in(data, 1, b"Net().cuda()", b'Net().to("neuron")')
    assert changed.startswith(b"\xef\xbb\xbf")
    nb["cells"][0]["source"] = ["import torch\r\n", 'm = Net().to("neuron")\r\n', "%matplotlib inline\r\n", "print(m)"]
    assert changed == b"\xef\xbb\xbf" + jupyter_bytes(nb)


def test_writing_a_cell_that_is_not_editable_is_refused():
    data = jupyter_bytes(realistic())
    for index in (1, 5, 6):  # markdown, raw, %%bash
        with pytest.raises(NotebookError, match=f"cell {index} is not"):
            write_cells(data, {index: b"x = 1\n"})
    with pytest.raises(NotebookError, match="does not exist"):
        write_cells(data, {42: b"x = 1\n"})


# --- invalid notebooks -----------------------------------------------------------------------------


def test_invalid_json_names_the_line():
    data = jupyter_bytes(realistic()).replace(b'"nbformat": 4', b'"nbformat": 4,,', 1)
    with pytest.raises(NotebookError) as info:
        read_cells(data)
    error = info.value
    assert error.line == data[: data.index(b",,")].count(b"\n") + 1
    assert error.message.startswith("invalid JSON: ") and f"line {error.line}" in error.message
    assert "\n" not in error.message
    with pytest.raises(NotebookError):
        write_cells(data, {})


@pytest.mark.parametrize(
    "data,message",
    [
        (b"", "invalid JSON"),
        (b"[1, 2]", 'no "cells" list'),
        (b'{"metadata": {}, "nbformat": 4}', 'no "cells" list'),
        (b'{"cells": {}, "nbformat": 4}', 'no "cells" list'),
        (b'{"worksheets": [{"cells": []}], "metadata": {}, "nbformat": 3, "nbformat_minor": 0}', 'no "cells" list'),
        (b'{"cells": [], "metadata": {}, "nbformat": 3, "nbformat_minor": 0}', "nbformat 3"),
        (b'{"cells": [], "nbformat": "4"}', "nbformat"),
        (b'{"cells": [], "nbformat": 4, "x": "\xff"}', "UTF-8"),
    ],
)
def test_not_a_notebook(data, message):
    with pytest.raises(NotebookError, match=message) as info:
        read_cells(data)
    assert "\n" not in info.value.message


def test_malformed_cell_names_its_line():
    nb = notebook(code("x = 1"), code("y = 2"))
    nb["cells"][1]["source"] = 42
    data = jupyter_bytes(nb)
    with pytest.raises(NotebookError, match="code cell 2") as info:
        read_cells(data)
    cell_starts = [number for number, line in enumerate(data.splitlines(), start=1) if line == b"  {"]
    assert info.value.line == cell_starts[1]
