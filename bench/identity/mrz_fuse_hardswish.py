"""Rewrites paddle2onnx's decomposed hard-swish (Add 3, Clip 0..6, Mul x, Div 6)
into Mul(x, HardSigmoid(x)) in the PP-OCRv4 recognition model (opset 12)."""
import sys, onnx, numpy as np
from onnx import helper, numpy_helper
src, dst = sys.argv[1], sys.argv[2]
m = onnx.load(src); g = m.graph
consts = {i.name: numpy_helper.to_array(i) for i in g.initializer}
for n in g.node:
    if n.op_type == "Constant":
        consts[n.output[0]] = numpy_helper.to_array(n.attribute[0].t)
prod = {o: n for n in g.node for o in n.output}
def cval(name):
    v = consts.get(name)
    return None if v is None or v.size != 1 else float(v.reshape(-1)[0])
remove, add, count = set(), [], 0
for div in g.node:
    if div.op_type != "Div" or cval(div.input[1]) != 6.0: continue
    mul = prod.get(div.input[0])
    if mul is None or mul.op_type != "Mul": continue
    for a, b in [(0, 1), (1, 0)]:
        clip = prod.get(mul.input[b]); x = mul.input[a]
        if clip is None or clip.op_type != "Clip": continue
        addn = prod.get(clip.input[0])
        if addn is None or addn.op_type != "Add": continue
        if not (addn.input[0] == x and cval(addn.input[1]) == 3.0): continue
        lo = cval(clip.input[1]) if len(clip.input) > 1 else None
        hi = cval(clip.input[2]) if len(clip.input) > 2 else None
        if (lo, hi) != (0.0, 6.0): continue
        hs = x + "_hsig"
        add.append((div, [helper.make_node("HardSigmoid", [x], [hs], alpha=1/6, beta=0.5),
                          helper.make_node("Mul", [x, hs], [div.output[0]])]))
        remove |= {id(div), id(mul), id(clip), id(addn)}
        count += 1
        break
nodes = []
for n in g.node:
    for d, new in add:
        if n is d: nodes.extend(new)
    if id(n) not in remove: nodes.append(n)
del g.node[:]; g.node.extend(nodes)
onnx.checker.check_model(m)
onnx.save(m, dst)
print("hard-swish rewritten:", count)
