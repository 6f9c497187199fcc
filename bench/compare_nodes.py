#!/usr/bin/env python3
"""Per-node times of porta and ONNX Runtime on one model, side by side (bench/compare_nodes.sh
runs both and calls this).

  compare_nodes.py PORTA_PROFILE_TEXT ORT_PROFILE_JSON [--top K] [--model MODEL.onnx]

PORTA_PROFILE_TEXT: the output of `porta run MODEL --profile [--profile-runs N]`;
ORT_PROFILE_JSON: the file ORT's profiler wrote (bench/peers/ort_bench.js --profile).
Nodes match by name. ORT renames a Conv it runs in its NCHWc layout after its output
("<node>_output_0_nchwc"); that suffix is removed. A node ORT fused with the activations after
it is named after the last one's output ("<relu node>_output_0_nchwc"); with --model
MODEL.onnx (and the onnx Python package) such a name is traced back through the graph to the
node porta's fused step keeps the name of. ORT's time per node is the mean over the profiled
runs. Prints the K nodes where porta spends the most time more than ORT, then the
nodes only one side has (porta's fused steps keep the first node's name; ORT's fusions get new
names), then the totals by op type.
"""
import collections
import json
import re
import sys


def porta_nodes(path):
    nodes, ops = {}, {}
    # node, op, device, time, then the implementation when its op has several ("  onednn")
    # and marks such as "  (1 thread)"
    line_re = re.compile(r'^\s+(\S.*?)\s+(\S+)\s+(\S+)\s+([0-9.]+) us(?:  .*)?$')
    in_profile = False
    with open(path) as f:
        for line in f:
            if line.startswith('profile ('):
                in_profile = True
                continue
            if in_profile and (line.startswith('  total ') or not line.startswith('  ')):
                break
            m = line_re.match(line.rstrip('\n')) if in_profile else None
            if m:
                nodes[m.group(1)] = float(m.group(4))
                ops[m.group(1)] = m.group(2)
    return nodes, ops


def ort_nodes(path):
    with open(path) as f:
        events = json.load(f)
    total, ops, runs = collections.defaultdict(float), {}, 0
    for e in events:
        if e.get('cat') == 'Session' and e.get('name') == 'model_run':
            runs += 1
        if e.get('cat') != 'Node' or not e.get('name', '').endswith('_kernel_time'):
            continue
        name = re.sub(r'(_output_\d+)?_nchwc$', '', e['name'][:-len('_kernel_time')])
        total[name] += e['dur']
        ops[name] = e.get('args', {}).get('op_name', '?')
    runs = max(runs, 1)
    return {k: v / runs for k, v in total.items()}, ops, runs


def trace_fused(on, oops, pn, model):
    """Renames ORT nodes named after a fused activation's output to the porta step (a node up
    to three single-input hops before it) that kept its own name."""
    try:
        import onnx
    except ImportError:
        print('(--model ignored: no onnx Python package)')
        return on, oops
    graph = onnx.load(model, load_external_data=False).graph
    producer = {o: n for n in graph.node for o in n.output}
    renamed, rops = {}, {}
    for name, t in on.items():
        target = name
        if name not in pn:
            value = name if name in producer else re.sub(r'_output_0$', '', name) + '_output_0'
            node = producer.get(value)
            for _ in range(3):
                if node is None or node.name in pn:
                    break
                node = producer.get(node.input[0]) if node.input else None
            if node is not None and node.name in pn:
                target = node.name
        renamed[target] = renamed.get(target, 0.0) + t
        rops[target] = oops[name]
    return renamed, rops


def main():
    args = sys.argv[1:]
    top, model = 25, None
    for flag in ('--top', '--model'):
        if flag in args:
            i = args.index(flag)
            if flag == '--top':
                top = int(args[i + 1])
            else:
                model = args[i + 1]
            del args[i:i + 2]
    if len(args) != 2:
        sys.exit(__doc__)
    pn, pops = porta_nodes(args[0])
    on, oops, runs = ort_nodes(args[1])
    if model:
        on, oops = trace_fused(on, oops, pn, model)
    if not pn:
        sys.exit(f'compare_nodes: no per-node profile in {args[0]} (run porta with --profile)')
    print(f'porta: {len(pn)} steps, {sum(pn.values()):.1f} us; ORT: {len(on)} nodes, '
          f'{sum(on.values()):.1f} us (mean of {runs} profiled runs)')
    both = [n for n in pn if n in on]
    both.sort(key=lambda n: on[n] - pn[n])
    width = min(70, max([len(n) for n in both] + [10]))
    print(f'\nnodes both run, porta slowest against ORT first ({len(both)} matched):')
    print(f'  {"node":{width}s} {"op":14s} {"porta us":>9s} {"ORT us":>9s} {"porta-ORT":>9s}')
    for n in both[:top]:
        print(f'  {n[-width:]:{width}s} {pops[n]:14s} {pn[n]:9.1f} {on[n]:9.1f} {pn[n] - on[n]:9.1f}')
    for side, nodes, ops, other in (('porta', pn, pops, on), ('ORT', on, oops, pn)):
        only = sorted((n for n in nodes if n not in other), key=lambda n: -nodes[n])
        if only:
            print(f'\n{side} only ({len(only)} steps, {sum(nodes[n] for n in only):.1f} us), largest first:')
            for n in only[:top]:
                print(f'  {n[-width:]:{width}s} {ops[n]:14s} {nodes[n]:9.1f}')
    print('\nby op type (us):')
    by = collections.defaultdict(lambda: [0.0, 0.0])
    for n, t in pn.items():
        by[pops[n]][0] += t
    for n, t in on.items():
        by[oops[n]][1] += t
    for op, (p, o) in sorted(by.items(), key=lambda kv: -max(kv[1])):
        print(f'  {op:20s} porta {p:9.1f}  ORT {o:9.1f}')


if __name__ == '__main__':
    main()
