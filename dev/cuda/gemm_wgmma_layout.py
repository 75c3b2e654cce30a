#!/usr/bin/env python3
"""Checks gemm_wgmma.cu's shared-memory addressing on the CPU (NumPy, no GPU).

It replays the kernel's load/store indexing (TM = TN = 128, TK = 32, padded k-quad columns), reads the
operands of every wgmma through its descriptors as the PTX ISA defines wgmma's K-major canonical
layout without swizzling (a core matrix is 8 rows x 16 bytes, contiguous; core (i along M or N, j along
K) at start + i*SBO + j*LBO), accumulates as the kernel does (fresh at each tile, promoted after it),
writes y through the accumulator fragment layout of the epilogue, and compares with x @ W.T. The values
are not split into TF32 here (the lo parts are zero), so the result must be exact to float64 rounding.
What it cannot check is the hardware's reading of the layout: gemm_wgmma's own check on a GPU does.

  /usr/bin/python3 dev/cuda/gemm_wgmma_layout.py
"""
import numpy as np
TM=TN=128; TK=32; QUADS=8; COL_BYTES=TM*16+16; TILE_BYTES=QUADS*COL_BYTES; STAGE_BYTES=4*TILE_BYTES
rng=np.random.default_rng(0)
rows,n,k=165,192,96
x=rng.standard_normal((rows,k)); w=rng.standard_normal((n,k))
def load(m, nrows, r0, k0, tid):
    out=[]
    for i in range(4):
        p=tid+256*i; r=r0+(p>>3); q=p&7
        out.append(m[r,k0+q*4:k0+q*4+4] if r<nrows else np.zeros(4))
    return out
def store(smem, v, hi, tid):
    for i in range(4):
        p=tid+256*i; r=p>>3; q=p&7
        a=hi+q*COL_BYTES+r*16
        assert a%16==0
        smem[a//4:a//4+4]=v[i]            # hi part (here the whole value)
        smem[(a+TILE_BYTES)//4:(a+TILE_BYTES)//4+4]=0   # lo part zero: exact product = hi only
def read(smem, start, lbo, sbo, mrows):
    # mrows x 8 matrix, K-major: core (i,j): rows 8i..8i+7, k 4j..4j+3
    M=np.zeros((mrows,8))
    for i in range(mrows//8):
        for j in range(2):
            base=start+i*sbo+j*lbo
            for rr in range(8):
                for c in range(4):
                    M[8*i+rr,4*j+c]=smem[(base+rr*16+c*4)//4]
    return M
y=np.full((rows,n),np.nan)
for by in range((rows+TM-1)//TM):
  for bx in range((n+TN-1)//TN):
    row0=by*TM; col0=bx*TN
    smem=np.zeros(2*STAGE_BYTES//4)
    acc=[np.zeros((64,128)) for _ in range(2)]; ssum=[np.zeros((64,128)) for _ in range(2)]
    tiles=k//TK
    for tid in range(256):
        store(smem, load(x,rows,row0,0,tid), 0, tid); store(smem, load(w,n,col0,0,tid), 2*TILE_BYTES, tid)
    for t in range(tiles):
        stage=(t&1)*STAGE_BYTES
        for wg in range(2):
            xhi=stage+wg*64*16; xlo=xhi+TILE_BYTES; whi=stage+2*TILE_BYTES; wlo=whi+TILE_BYTES
            for s in range(TK//8):
                o=2*s*COL_BYTES
                fresh = (s==0)
                for (a,b) in ((xlo,whi),(xhi,wlo),(xhi,whi)):
                    A=read(smem,a+o,COL_BYTES,128,64); B=read(smem,b+o,COL_BYTES,128,128)
                    if fresh: acc[wg][:]=0; fresh=False
                    acc[wg]+=A@B.T
            ssum[wg]+=acc[wg]
        if t+1<tiles:
            nxt=((t+1)&1)*STAGE_BYTES
            for tid in range(256):
                store(smem, load(x,rows,row0,(t+1)*TK,tid), nxt, tid); store(smem, load(w,n,col0,(t+1)*TK,tid), nxt+2*TILE_BYTES, tid)
    # epilogue through the fragment mapping
    for tid in range(256):
        wg=tid>>7; warp=(tid>>5)&3; lane=tid&31; g=lane>>2; c=lane&3
        frag=[0.0]*64
        for j in range(16):
            for e in range(4):
                rr=warp*16+g+(8 if e>=2 else 0); cc=j*8+2*c+(e&1)
                frag[4*j+e]=ssum[wg][rr,cc]   # the PTX ISA's D fragment layout for m64nNk8
        r=row0+wg*64+warp*16+g
        for j in range(16):
            col=col0+j*8+2*c
            if col>=n: continue
            if r<rows: y[r,col]=frag[4*j]; y[r,col+1]=frag[4*j+1]
            if r+8<rows: y[r+8,col]=frag[4*j+2]; y[r+8,col+1]=frag[4*j+3]
ref=x@w.T
err = np.nanmax(np.abs(y - ref))
print(f"165x192x96: max |y - x W^T| = {err:.1e}, outputs never written: {int(np.isnan(y).sum())}")
raise SystemExit(0 if err < 1e-9 and not np.isnan(y).any() else 1)
