"""Session 34 (issue 30): the prediction for the eager loops of the graphed programs of calls 1 and 3 (the decode
step, the ViT with a graph per batch size; default and linger runs), its capture priced by the pool's segments and by
the torch probe's ratio (the run's cudaMalloc calls hidden), against the same process's own clock of the graph it then
captured (the capture block less graphmode's gaps, plus the first replay's excess) and against the untraced processes'
median. The traces were not kept (benchmarks/notes/s34/README.md); this is how capture_pricing_s34.md was made, from
the calls' results.jsonl and traces unpacked under /tmp/s34_call1 and /tmp/s34_call3.
Usage: python capture_pricing_s34.py"""
import json, sys, glob, statistics as st
from pathlib import Path
sys.path.insert(0, str(Path(__file__).resolve().parents[2]))  # benchmarks/
from one_run import truths
from graphmode.analyzers import analyze
from graphmode.tracer.store import load
P=sys.modules['graphmode.analyzers.predict']
SUB={"hf_graph":["graph"],"vit_batches":["b1","b2","b4","b8"]}
def preds(f, hide):
    real=P.malloc_cost
    if hide: P.malloc_cost=lambda t,p: None
    try:
        with load(f) as t:
            a=analyze(t)
            caps=sorted(t.meta["runs"][0]["untraced_captures"]["captures"], key=lambda c:c["begin_ns"])
            regs=[r for r in a.prediction.regions if r.direction=="to_graph"]
            out={}
            for r in regs:
                out[r.graph_id]=(r.one_time.ns if r.one_time else None, r.measured_one_time_ns)
            return out, caps
    finally:
        P.malloc_cost=real
rows=[]
for res, d, cfg in (('/tmp/s34_call1/results.jsonl','/tmp/s34_call1/traces','graphmode'),('/tmp/s34_call3/results.jsonl','/tmp/s34_call3/traces','graphmode'),('/tmp/s34_call1/results.jsonl','/tmp/s34_call1/traces','graphmode_linger'),('/tmp/s34_call3/results.jsonl','/tmp/s34_call3/traces','graphmode_linger')):
    recs=[json.loads(l) for l in open(res)]
    for f in sorted(glob.glob(f'{d}/*-{cfg}-*.gmtrace')):
        w=f.split('/')[-1].split('-')[0]
        if w not in SUB: continue
        proc=int(f.rsplit('-',1)[-1].split('.')[0])
        try:
            seg,caps=preds(f,False); rat,_=preds(f,True)
        except Exception as e:
            print('skip',f,e); continue
        mine=truths([dict(r,config="untraced") for r in recs if r["config"]==cfg and r["proc"]==proc], w)
        unt=truths(recs,w)
        for subject,c in zip(SUB[w],caps):
            gid=c["graph_id"]
            if gid not in seg: continue
            start,end=c.get("own_start_ns",c["detach_start_ns"]),c.get("own_end_ns",c["attach_end_ns"])
            gaps=(c["begin_ns"]-start)+(end-c["end_ns"])
            own=mine[0][subject]["one_time"]-gaps if mine else None
            um=st.median(p[subject]["one_time"] for p in unt)
            s,r_=seg[gid][0],rat[gid][0]
            rows.append((f.split('/')[-1][:30],subject,s/own,r_/own,s/um,r_/um, bool(c.get('adopted'))))
            print(f"{f.split('/')[-1][:32]:32s} {subject}: segments/own {s/own:.2f} ratio/own {r_/own:.2f} | segments/untraced {s/um:.2f} ratio/untraced {r_/um:.2f} adopted={bool(c.get('adopted'))}")
import numpy as np

a=np.array([[x[2],x[3],x[4],x[5]] for x in rows])
print('n',len(rows),'median |log| segments/own %.3f ratio/own %.3f seg/unt %.3f ratio/unt %.3f'%tuple(np.median(np.abs(np.log(a)),axis=0)))
print('within 30%% of own: seg %d ratio %d; of untraced: seg %d ratio %d'%tuple(((a>1/1.3)&(a<1.3)).sum(axis=0)))
