# usage: perf-areas.py <perf.data> <requests> [cpu µs per request]
# Attribute on-CPU samples (perf script) to areas: the innermost JS frame's package for user-space
# samples (builtins and C++ called from JS count for that JS), kernel separately, GC separately.
import re, subprocess, sys, collections
data, requests = sys.argv[1], int(sys.argv[2])
out = subprocess.run(['perf', 'script', '-i', data, '-F', 'tid,ip,sym,dso,period'], capture_output=True, text=True).stdout
def area_of_js(sym):
    m = re.search(r'JS:\S*\s+(\S+)', sym)
    if not m: return None
    url = m.group(1)
    if url.startswith('node:'):
        parts = url[5:].split('/')
        p = parts[1] if parts[0] == 'internal' and len(parts) > 1 else parts[0]
        return 'node:' + re.sub(r'[:.].*$', '', p)
    m2 = re.search(r'/node_modules/((?:@[^/]+/)?[^/]+)/', url.split('.pnpm/')[-1]) if '.pnpm/' in url else None
    if m2: return m2.group(1)
    m3 = re.search(r'/(packages|apps)/([^/]+)/', url)
    if m3: return '@mdp/' + m3.group(2)
    return url.split('/')[-1]
samples = out.split('\n\n')
areas = collections.Counter(); total = 0
for s in samples:
    lines = [l for l in s.strip().split('\n') if l.strip()]
    if not lines: continue
    head = lines[0].split()
    tid = head[0]
    frames = lines[1:]
    total += 1
    leaf = frames[0] if frames else ''
    if 'kernel.kallsyms' in leaf:
        # which JS called the syscall
        js = next((area_of_js(f) for f in frames if area_of_js(f)), None)
        areas['kernel (syscalls, net stack) ← ' + (js or '?')] += 1
        continue
    if any(re.search(r'Scaveng|MarkCompact|ConcurrentMarking|Heap::|Sweeper', f) for f in frames[:8]):
        areas['gc'] += 1; continue
    js = next((area_of_js(f) for f in frames if area_of_js(f)), None)
    if js is None:
        areas['native (no JS caller: event loop, parser, libuv)'] += 1
    else:
        areas[js] += 1
cpu_per_req = float(sys.argv[3]) if len(sys.argv) > 3 else None
print(f'{total} samples, {requests} requests' + (f', {cpu_per_req:.1f} µs CPU/req (getrusage)' if cpu_per_req else ''))
for a, n in areas.most_common(30):
    share = n / total
    print(f'  {share*100:5.1f}%  {share*cpu_per_req:6.1f} µs  {a}' if cpu_per_req else f'  {share*100:5.1f}%  {a}')
