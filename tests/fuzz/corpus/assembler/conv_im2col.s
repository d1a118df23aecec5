# 3x3 convolution, stride 1, padding 1, as an im2col GEMM on the 16x16 NPU.
# X: [8,8,16] NHWC int8, W: [144,16] (rows ordered ky, kx, c), bias: [16] int32,
# Y: [64,16] = [8,8,16] NHWC int8 = relu(requant(conv(X, W) + bias)).
# Steps: pad X on load -> store the padded image to DRAM scratch -> nine 3-D strided
# loads build the im2col matrix -> nine accumulating GEMMs -> bias -> requant+ReLU -> store.
.input X i8 [8,8,16] @0x0 scale=0.05 zp=0
.input W i8 [144,16] @0x400 scale=0.01 zp=0
.input bias i32 [16] @0xd00
.output Y i8 [8,8,16] @0xe00 scale=0.1 zp=-10
.dram 0x2000
.layer pad
# Padded image: 10 rows of (1+8+1)*16 = 160 bytes at scratchpad 0x0.
load mem=spad dram=0x0 sram=0x0 x=128 y=8 dram_ystride=128 sram_stride=160 pad_top=1 pad_bottom=1 pad_left=16 pad_right=16 push_next
sync q=compute pop_prev push_next
store mem=spad sram=0x0 dram=0x1200 x=160 y=10 dram_ystride=160 sram_stride=160 pop_prev push_prev
sync q=compute pop_next push_prev
.layer im2col
load mem=spad dram=0x1200 sram=0x10000 x=16 y=8 z=8 dram_ystride=16 dram_zstride=160 sram_stride=144 pop_next
load mem=spad dram=0x1210 sram=0x10010 x=16 y=8 z=8 dram_ystride=16 dram_zstride=160 sram_stride=144
load mem=spad dram=0x1220 sram=0x10020 x=16 y=8 z=8 dram_ystride=16 dram_zstride=160 sram_stride=144
load mem=spad dram=0x12a0 sram=0x10030 x=16 y=8 z=8 dram_ystride=16 dram_zstride=160 sram_stride=144
load mem=spad dram=0x12b0 sram=0x10040 x=16 y=8 z=8 dram_ystride=16 dram_zstride=160 sram_stride=144
load mem=spad dram=0x12c0 sram=0x10050 x=16 y=8 z=8 dram_ystride=16 dram_zstride=160 sram_stride=144
load mem=spad dram=0x1340 sram=0x10060 x=16 y=8 z=8 dram_ystride=16 dram_zstride=160 sram_stride=144
load mem=spad dram=0x1350 sram=0x10070 x=16 y=8 z=8 dram_ystride=16 dram_zstride=160 sram_stride=144
load mem=spad dram=0x1360 sram=0x10080 x=16 y=8 z=8 dram_ystride=16 dram_zstride=160 sram_stride=144
load mem=spad dram=0x400 sram=0x20000 x=16 y=144 dram_ystride=16 sram_stride=16
load mem=acc dram=0xd00 sram=0x400 x=16 y=1 dram_ystride=16 sram_stride=16 push_next
.layer conv
gemm preload=1 m=64 inp=0x10000 inp_stride=144 wgt=0x20000 wgt_stride=16 acc=0x0 acc_stride=16 k=16 n=16 pop_prev
gemm accumulate=1 preload=1 m=64 inp=0x10010 inp_stride=144 wgt=0x20100 wgt_stride=16 acc=0x0 acc_stride=16 k=16 n=16
gemm accumulate=1 preload=1 m=64 inp=0x10020 inp_stride=144 wgt=0x20200 wgt_stride=16 acc=0x0 acc_stride=16 k=16 n=16
gemm accumulate=1 preload=1 m=64 inp=0x10030 inp_stride=144 wgt=0x20300 wgt_stride=16 acc=0x0 acc_stride=16 k=16 n=16
gemm accumulate=1 preload=1 m=64 inp=0x10040 inp_stride=144 wgt=0x20400 wgt_stride=16 acc=0x0 acc_stride=16 k=16 n=16
gemm accumulate=1 preload=1 m=64 inp=0x10050 inp_stride=144 wgt=0x20500 wgt_stride=16 acc=0x0 acc_stride=16 k=16 n=16
gemm accumulate=1 preload=1 m=64 inp=0x10060 inp_stride=144 wgt=0x20600 wgt_stride=16 acc=0x0 acc_stride=16 k=16 n=16
gemm accumulate=1 preload=1 m=64 inp=0x10070 inp_stride=144 wgt=0x20700 wgt_stride=16 acc=0x0 acc_stride=16 k=16 n=16
gemm accumulate=1 preload=1 m=64 inp=0x10080 inp_stride=144 wgt=0x20800 wgt_stride=16 acc=0x0 acc_stride=16 k=16 n=16
vadd dst=0x0 src=0x400 rows=64 cols=16 dst_stride=16 src_stride=0
requant src=0x0 dst=0x30000 rows=64 cols=16 src_stride=16 dst_stride=16 multiplier=1374389535 shift=7 zp=-10 lo=-10 hi=127 push_next
store mem=spad sram=0x30000 dram=0xe00 x=16 y=64 dram_ystride=16 sram_stride=16 pop_prev
finish
