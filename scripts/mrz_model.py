"""Rewrites the MRZ recogniser (PP-OCRv4 recognition, as paddle2onnx exported
it) into the same function in fewer operations; run once at set-up by
docker/fetch-data.sh, in the venv of scripts/model-tools-requirements.txt.

    mrz_model.py SOURCE.onnx DEST.onnx

ONNX Runtime's profile of the exported graph (one thread, two lines of 672
pixels) put element-wise Mul, Add, Clip and Div at 37% of the time, beside
43% in convolutions: the export spells out two things ONNX Runtime does not
fuse by itself (docs/identity.md, "Why this MRZ recogniser").

1. Hard-swish, exported as Add 3, Clip 0..6, Mul x, Div 6, becomes
   Mul(x, HardSigmoid(x)), two passes over the tensor instead of four.
2. PP-LCNetV3's learnable affine blocks, a Mul by a scalar then an Add of
   one (`s x + t`), around every activation, are folded into the
   convolutions beside them:
   - after a convolution: conv(x; W, b) s + t = conv(x; W s, b s + t), exactly;
   - before a convolution that pads nothing (the 1x1 ones):
     conv(s x + t; W, b) = conv(x; W s, b + t sum(W)), exactly;
   - before one that pads (the depthwise ones), whose zero padding would
     also be shifted by t, only the scale goes into the weights:
     conv(s x + t; W) = conv(x + t / s; W s), and the Add stays.

The result computes the same probabilities (to about 1e-6; the set-up
checks the graph, tests/tests/e2e/mrz_model.rs and the bench read with it) in
about 0.7x the time. The dictionary and the rest of the model's metadata
are kept. Prints what it rewrote; refuses a graph it finds none of either in.
"""

import sys

import numpy as np
import onnx
from onnx import helper, numpy_helper


class Graph:
    """The model's nodes with their producers, consumers and constant inputs."""

    def __init__(self, model):
        self.g = model.graph
        self.consts = {i.name: numpy_helper.to_array(i) for i in self.g.initializer}
        self.const_nodes = {}
        for n in self.g.node:
            if n.op_type == "Constant" and n.attribute and n.attribute[0].name == "value":
                self.consts[n.output[0]] = numpy_helper.to_array(n.attribute[0].t)
                self.const_nodes[n.output[0]] = n
        self.outputs = {o.name for o in self.g.output}
        self.removed = set()  # nodes by their first output (SSA: unique)
        self.params = {}  # new values of constants, by name
        self.index()

    def index(self):
        self.producer = {o: n for n in self.g.node for o in n.output}
        self.consumers = {}
        for n in self.g.node:
            for i in n.input:
                self.consumers.setdefault(i, []).append(n)

    def value(self, name):
        return self.params.get(name, self.consts.get(name))

    def scalar(self, name):
        v = self.value(name)
        return None if v is None or v.size != 1 else float(v.reshape(-1)[0])

    def only_consumer(self, name):
        """The one node reading `name`, unless a graph output or read by more."""
        c = self.consumers.get(name, [])
        return c[0] if len(c) == 1 and name not in self.outputs else None

    def other_input(self, node, name):
        return node.input[1] if node.input[0] == name else node.input[0]

    def set(self, name, array):
        self.params[name] = array.astype(np.float32)

    def finish(self, renamed):
        """Drops the removed nodes, points readers of a removed node's output
        at its replacement, and stores the changed constants as initializers."""
        nodes = [
            n
            for n in self.g.node
            if n.output[0] not in self.removed
            and not (n.op_type == "Constant" and n.output[0] in self.params)
        ]
        for n in nodes:
            for i, name in enumerate(n.input):
                while name in renamed:
                    name = renamed[name]
                n.input[i] = name
        del self.g.node[:]
        self.g.node.extend(nodes)
        kept = [i for i in self.g.initializer if i.name not in self.params]
        del self.g.initializer[:]
        self.g.initializer.extend(kept + [numpy_helper.from_array(v, k) for k, v in self.params.items()])
        self.index()


def hard_swish(graph):
    """Add 3 -> Clip 0..6 -> Mul x -> Div 6 into Mul(x, HardSigmoid(x))."""
    count = 0
    replace = {}
    for div in graph.g.node:
        if div.op_type != "Div" or graph.scalar(div.input[1]) != 6.0:
            continue
        mul = graph.producer.get(div.input[0])
        if mul is None or mul.op_type != "Mul":
            continue
        for x_at, clip_at in ((0, 1), (1, 0)):
            x, clip = mul.input[x_at], graph.producer.get(mul.input[clip_at])
            if clip is None or clip.op_type != "Clip" or len(clip.input) < 3:
                continue
            add = graph.producer.get(clip.input[0])
            if add is None or add.op_type != "Add" or add.input[0] != x or graph.scalar(add.input[1]) != 3.0:
                continue
            if (graph.scalar(clip.input[1]), graph.scalar(clip.input[2])) != (0.0, 6.0):
                continue
            gate = div.output[0] + "_hard_sigmoid"
            replace[div.output[0]] = [
                helper.make_node("HardSigmoid", [x], [gate], alpha=1 / 6, beta=0.5),
                helper.make_node("Mul", [x, gate], [div.output[0]]),
            ]
            graph.removed |= {mul.output[0], clip.output[0], add.output[0]}
            count += 1
            break
    nodes = []
    for n in graph.g.node:
        nodes.extend(replace.get(n.output[0], [n]))
    del graph.g.node[:]
    graph.g.node.extend(nodes)
    graph.index()
    return count


def affine_after(graph, name):
    """(mul, add, s, t) when `name` is read only by a Mul by a scalar `s`
    whose output is read only by an Add of a scalar `t`."""
    mul = graph.only_consumer(name)
    if mul is None or mul.op_type != "Mul" or mul.output[0] in graph.removed:
        return None
    s = graph.scalar(graph.other_input(mul, name))
    add = graph.only_consumer(mul.output[0])
    if s is None or add is None or add.op_type != "Add" or add.output[0] in graph.removed:
        return None
    t = graph.scalar(graph.other_input(add, mul.output[0]))
    return None if t is None else (mul, add, s, t)


def conv_params(graph, conv):
    if conv.op_type != "Conv" or len(conv.input) < 3:
        return None
    w, b = graph.value(conv.input[1]), graph.value(conv.input[2])
    if w is None or b is None:
        return None
    # A weight shared with another node cannot be changed for this one alone.
    if any(len(graph.consumers.get(p, [])) != 1 for p in conv.input[1:3]):
        return None
    return w, b


def fold_affine(graph):
    """Folds each scalar Mul-then-Add into the convolution before or after it."""
    renamed = {}
    after = before = scale_only = 0
    for conv in list(graph.g.node):
        params = conv_params(graph, conv)
        if params is None:
            continue
        w, b = params
        found = affine_after(graph, conv.output[0])
        if found:
            mul, add, s, t = found
            graph.set(conv.input[1], w * s)
            graph.set(conv.input[2], b * s + t)
            renamed[add.output[0]] = conv.output[0]
            graph.removed |= {mul.output[0], add.output[0]}
            after += 1
    for conv in list(graph.g.node):
        params = conv_params(graph, conv)
        add = graph.producer.get(conv.input[0]) if params else None
        if params is None or add is None or add.op_type != "Add" or add.output[0] in graph.removed:
            continue
        mul = next(
            (graph.producer.get(i) for i in add.input if graph.producer.get(i) is not None
             and graph.producer[i].op_type == "Mul"),
            None,
        )
        if mul is None or mul.output[0] in graph.removed:
            continue
        x = next((i for i in mul.input if graph.scalar(i) is None), None)
        found = affine_after(graph, x) if x is not None else None
        if found is None or found[0].output[0] != mul.output[0] or found[1].output[0] != add.output[0]:
            continue
        _, _, s, t = found
        reader = graph.only_consumer(add.output[0])
        if reader is None or reader.output[0] != conv.output[0] or s == 0:
            continue
        w, b = params
        pads = next((helper.get_attribute_value(a) for a in conv.attribute if a.name == "pads"), [0])
        if not any(pads):
            graph.set(conv.input[2], b + t * w.reshape(w.shape[0], -1).sum(axis=1))
            graph.set(conv.input[1], w * s)
            conv.input[0] = x
            graph.removed |= {mul.output[0], add.output[0]}
            before += 1
        else:
            shift = add.output[0] + "_shift"
            graph.set(shift, np.array([t / s]))
            graph.set(conv.input[1], w * s)
            add.input[:] = [x, shift]
            graph.removed.add(mul.output[0])
            scale_only += 1
    graph.finish(renamed)
    return after, before, scale_only


def main():
    if len(sys.argv) != 3:
        sys.exit(__doc__.split("\n\n")[1])
    model = onnx.load(sys.argv[1])
    graph = Graph(model)
    swishes = hard_swish(graph)
    graph.finish({})
    after, before, scale_only = fold_affine(graph)
    if swishes == 0 or after == 0:
        sys.exit(f"{sys.argv[1]}: not the PP-OCRv4 recogniser this rewrites "
                 f"({swishes} hard-swishes, {after} affine blocks after a convolution)")
    onnx.checker.check_model(model)
    onnx.save(model, sys.argv[2])
    print(f"hard-swish rewritten: {swishes}; affine blocks folded: {after} after a convolution, "
          f"{before} before an unpadded one, {scale_only} scales before a padded one")


if __name__ == "__main__":
    main()
