# Pooling on the vector unit. X: [8,8,16] NHWC int8.
# P1 = maxpool 2x2 stride 2, P2 = avgpool 2x2 stride 2 (round half away from zero),
# P3 = maxpool 3x3 stride 2 with padding 1 (the DMA pads with -128 on load).
.input X i8 [8,8,16] @0x0 scale=0.1 zp=0
.output P1 i8 [4,4,16] @0x400 scale=0.1 zp=0
.output P2 i8 [4,4,16] @0x500 scale=0.1 zp=0
.output P3 i8 [4,4,16] @0x600 scale=0.1 zp=0
.dram 0x700
load mem=spad dram=0x0 sram=0x0 x=128 y=8 dram_ystride=128 sram_stride=128
load mem=spad dram=0x0 sram=0x10000 x=128 y=8 dram_ystride=128 sram_stride=160 pad_top=1 pad_bottom=1 pad_left=16 pad_right=16 pad_value=-128 push_next
.layer maxpool
pool mode=max kh=2 kw=2 sh=2 sw=2 src=0x0 dst=0x20000 out_h=4 out_w=4 c=16 src_stride=128 dst_stride=64 pop_prev
.layer avgpool
pool mode=avg kh=2 kw=2 sh=2 sw=2 src=0x0 dst=0x20100 out_h=4 out_w=4 c=16 src_stride=128 dst_stride=64
.layer maxpool_pad
pool mode=max kh=3 kw=3 sh=2 sw=2 src=0x10000 dst=0x20200 out_h=4 out_w=4 c=16 src_stride=160 dst_stride=64 push_next
.nolayer
store mem=spad sram=0x20000 dram=0x400 x=256 y=1 pop_prev
store mem=spad sram=0x20100 dram=0x500 x=256 y=1
store mem=spad sram=0x20200 dram=0x600 x=256 y=1
finish
