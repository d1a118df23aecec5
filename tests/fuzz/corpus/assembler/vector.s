# Vector-unit operations: LUT activation, elementwise add with rescale, clip and
# requantization. The weight image holds the 256-entry table (t[v+128] = v*v/128 - 64)
# and the 32-byte EADD parameter record (docs/npu/isa.md): A scale 0.02 zp 3,
# B scale 0.03 zp -2, out scale 0.04 zp 1.
.input A i8 [16,32] @0x0 scale=0.02 zp=3
.input B i8 [16,32] @0x200 scale=0.03 zp=-2
.input Z i32 [16,32] @0x400
.output L i8 [16,32] @0x1200
.output E i8 [16,32] @0x1400 scale=0.04 zp=1
.output Q i8 [16,32] @0x1600 scale=1 zp=5
.dram 0x1800
.weights @0x1000
.bytes 403e3c3a38363432302e2c2a2927252322201e1c1b1917161412110f0e0c0b09080605030200fffdfcfbf9f8f7f5f4f3f2f0efeeedebeae9e8e7e6e5e4e3e2e1
.bytes e0dfdedddcdbdad9d8d7d6d5d5d4d3d2d2d1d0cfcfcecdcdcccbcbcacac9c9c8c8c7c7c6c6c5c5c4c4c4c3c3c3c2c2c2c2c1c1c1c1c0c0c0c0c0c0c0c0c0c0c0
.bytes c0c0c0c0c0c0c0c0c0c0c0c0c1c1c1c1c2c2c2c2c3c3c3c4c4c4c5c5c6c6c7c7c8c8c9c9cacacbcbcccdcdcecfcfd0d1d2d2d3d4d5d5d6d7d8d9dadbdcdddedf
.bytes e0e1e2e3e4e5e6e7e8e9eaebedeeeff0f2f3f4f5f7f8f9fbfcfdff000203050608090b0c0e0f1112141617191b1c1e2022232527292a2c2e30323436383a3c3e
.bytes 55555555010000000000004000000000000000601300000003fe01807f000000
load mem=spad dram=0x0 sram=0x0 x=32 y=16 dram_ystride=32 sram_stride=32
load mem=spad dram=0x200 sram=0x10000 x=32 y=16 dram_ystride=32 sram_stride=32
load mem=spad dram=0x1000 sram=0x20000 x=288 y=1
load mem=acc dram=0x400 sram=0x0 x=32 y=16 dram_ystride=32 sram_stride=32 push_next
lut src=0x0 dst=0x30000 rows=16 cols=32 src_stride=32 dst_stride=32 table=0x20000 pop_prev
eadd a=0x0 b=0x10000 rows=16 cols=32 a_stride=32 b_stride=32 dst=0x30200 dst_stride=32 params=0x20100
vclip dst=0x0 rows=16 cols=32 dst_stride=32 lo=-3000 hi=3000
requant src=0x0 dst=0x30400 rows=16 cols=32 src_stride=32 dst_stride=32 multiplier=1374389535 shift=6 zp=5 lo=-128 hi=127 push_next
store mem=spad sram=0x30000 dram=0x1200 x=32 y=16 dram_ystride=32 sram_stride=32 pop_prev
store mem=spad sram=0x30200 dram=0x1400 x=32 y=16 dram_ystride=32 sram_stride=32
store mem=spad sram=0x30400 dram=0x1600 x=32 y=16 dram_ystride=32 sram_stride=32
finish
