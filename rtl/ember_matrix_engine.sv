// The Ember NPU's matrix engine (docs/npu/rtl.md): a ROWS x COLS systolic array
// of int8 MAC processing elements with int32 accumulation and two weight
// buffers, plus the control that executes gemm instructions (docs/npu/isa.md):
//
//   acc[acc_addr + i*acc_stride + j] = (accumulate ? acc[...] : 0)
//                                      + sum_t inp[inp_addr + i*inp_stride + t] * W[t][j]
//
// Instructions enter a 2-deep command queue (cmd_valid / cmd_ready). Two
// machines work on it in order:
//  - the weight loader (weight-stationary, preload = 1; k <= ROWS, n <= COLS)
//    reads the k weight rows into weight buffer wbuf of the PEs, one row a
//    cycle, once no earlier instruction still streams from that buffer;
//  - the stream machine reads an instruction's m input rows (WS), one a cycle,
//    once its weights are loaded and the previous instruction's last row has
//    been read, so rows of consecutive gemms enter the array back to back and
//    the next gemm's preload runs while the current one streams. Each row
//    carries its buffer select bit through the array and its output address
//    through a result pipeline, so nothing drains between gemms.
//    Output-stationary (m <= ROWS, n <= COLS): input column t and weight row t
//    for t < k, both skewed; after the wave has crossed the array (FLUSH),
//    DRAIN reads the m kept rows out, one a cycle; one instruction at a time.
// Each machine asks to start in the cycle before its first read (pl_req,
// st_req) and starts when granted (pl_grant, st_grant: the scratchpad bank
// and accumulator port arbitration outside; tie them high without one).
// Every result row passes one output stage: read the old accumulator row (if
// accumulate), add, write the n valid lanes; done pulses in the cycle after an
// instruction's last row is written.
//
// Memories are outside (the simulator's scratchpad and accumulator): each read
// port returns its data in the cycle after the request (synchronous SRAM).
module ember_matrix_engine #(
    parameter int ROWS   = 16,
    parameter int COLS   = 16,
    parameter int IN_W   = 8,
    parameter int ACC_W  = 32,
    parameter int ADDR_W = 32,
    parameter int DIM_W  = 16
) (
    input  logic                   clk,
    input  logic                   rst_n,
    // One instruction, taken when cmd_valid and cmd_ready are both high.
    input  logic                   cmd_valid,
    output logic                   cmd_ready,
    input  logic                   os_mode,
    input  logic                   accumulate,
    input  logic                   preload,
    input  logic                   wbuf,
    input  logic [      DIM_W-1:0] m,
    input  logic [      DIM_W-1:0] k,
    input  logic [      DIM_W-1:0] n,
    input  logic [     ADDR_W-1:0] inp_addr,
    input  logic [      DIM_W-1:0] inp_stride,
    input  logic [     ADDR_W-1:0] wgt_addr,
    input  logic [      DIM_W-1:0] wgt_stride,
    input  logic [     ADDR_W-1:0] acc_addr,
    input  logic [      DIM_W-1:0] acc_stride,
    // Stage start handshakes: a request is high in the cycle before the
    // stage's first read; the stage starts in a cycle where its grant is high.
    output logic                   pl_req,
    input  logic                   pl_grant,
    output logic                   st_req,
    input  logic                   st_grant,
    output logic                   busy,
    output logic                   done,
    // Scratchpad read port A (inputs): lane l is the byte at a_rd_addr + l * a_rd_stride.
    output logic                   a_rd_en,
    output logic [     ADDR_W-1:0] a_rd_addr,
    output logic [      DIM_W-1:0] a_rd_stride,
    input  logic [  ROWS*IN_W-1:0] a_rd_data,
    // Weight read port B: COLS consecutive bytes at b_rd_addr, which hold row
    // b_rd_row of the weight tile.
    output logic                   b_rd_en,
    output logic [     ADDR_W-1:0] b_rd_addr,
    output logic [      DIM_W-1:0] b_rd_row,
    input  logic [  COLS*IN_W-1:0] b_rd_data,
    // Accumulator ports: COLS int32 entries starting at an entry index.
    output logic                   acc_rd_en,
    output logic [     ADDR_W-1:0] acc_rd_addr,
    input  logic [COLS*ACC_W-1:0]  acc_rd_data,
    output logic                   acc_wr_en,
    output logic [     ADDR_W-1:0] acc_wr_addr,
    output logic [COLS*ACC_W-1:0]  acc_wr_data,
    output logic [       COLS-1:0] acc_wr_mask
);
  localparam int RW = ROWS > 1 ? $clog2(ROWS) : 1;
  localparam int LATENCY = ROWS + COLS + 1;  // WS read issue to de-skewed result row

  // ---- command queue: two entries, a ring (head hd); in_* is the offered one ----
  typedef struct packed {
    logic              os;
    logic              accumulate;
    logic              preload;
    logic              wbuf;
    logic [DIM_W-1:0]  m, k, n;
    logic [ADDR_W-1:0] inp;
    logic [DIM_W-1:0]  inp_stride;
    logic [ADDR_W-1:0] wgt;
    logic [DIM_W-1:0]  wgt_stride;
    logic [ADDR_W-1:0] acc;
    logic [DIM_W-1:0]  acc_stride;
  } cmd_t;

  cmd_t q_cmd[2];
  logic q_valid[2], q_loaded[2];
  logic hd;
  cmd_t in_cmd;
  assign in_cmd = '{os_mode, accumulate, preload, wbuf, m, k, n, inp_addr, inp_stride, wgt_addr, wgt_stride,
                    acc_addr, acc_stride};
  assign cmd_ready = !(q_valid[0] && q_valid[1]);
  logic in_take;
  assign in_take = cmd_valid && cmd_ready;

  // ---- weight loader state ----
  logic ld_active, ld_entry, ld_buf;
  logic [DIM_W-1:0] ld_cnt, ld_k, ld_n, ld_stride;
  logic [ADDR_W-1:0] ld_addr;
  logic ld_last;
  assign ld_last = ld_active && ld_cnt == ld_k - 1'b1;

  // ---- stream machine state ----
  typedef enum logic [2:0] {
    S_IDLE,
    S_STREAM,
    S_FLUSH,
    S_DRAIN,
    S_WAIT
  } sstate_t;
  sstate_t st_state;
  // The instruction streaming (or, OS, draining); its addresses were copied
  // into the counters below when it started.
  /* verilator lint_off UNUSEDSIGNAL */
  cmd_t st;
  /* verilator lint_on UNUSEDSIGNAL */
  logic [DIM_W-1:0] st_cnt;  // row (WS) or column (OS) read; FLUSH countdown; DRAIN row
  logic [ADDR_W-1:0] a_addr, b_addr, out_addr;
  logic st_last;
  assign st_last = st_state == S_STREAM && st_cnt == (st.os ? st.k : st.m) - 1'b1;

  // ---- decisions of this cycle (for a start next cycle) ----
  // Entries in age order: the queue's head, the other entry, the offered one.
  logic h1;  // index of the second entry
  assign h1 = !hd;
  logic wr_idx;  // where an offered instruction is written
  assign wr_idx = q_valid[hd] ? h1 : hd;

  // Loader: the oldest instruction that still needs its weights, if no older
  // instruction (streaming or queued) will read that buffer after this cycle.
  function automatic logic needs_load(logic cmd_preload, logic cmd_os, logic loaded);
    return cmd_preload && !cmd_os && !loaded;
  endfunction
  logic streaming_buf_busy[2];
  for (genvar b = 0; b < 2; b++) begin : g_busy
    assign streaming_buf_busy[b] = st_state == S_STREAM && !st.os && st.wbuf == 1'(b) && !st_last;
  end
  // An entry still waits for weights after this cycle (its load not ending now).
  logic head_loading, second_loading, head_pending, second_pending;
  assign head_loading = ld_active && ld_entry == hd;
  assign second_loading = ld_active && ld_entry == h1;
  assign head_pending = q_valid[hd] && needs_load(q_cmd[hd].preload, q_cmd[hd].os, q_loaded[hd]) && !(ld_last && ld_entry == hd);
  assign second_pending = q_valid[h1] && needs_load(q_cmd[h1].preload, q_cmd[h1].os, q_loaded[h1]) && !(ld_last && ld_entry == h1);

  logic pl_target_valid, pl_target_free, pl_target_entry;
  /* verilator lint_off UNUSEDSIGNAL */
  cmd_t pl_target;  // the loader takes its weight fields only
  /* verilator lint_on UNUSEDSIGNAL */
  always_comb begin
    pl_target_valid = 1'b0;
    pl_target_free = 1'b0;
    pl_target_entry = hd;
    pl_target = in_cmd;
    if (q_valid[hd] && needs_load(q_cmd[hd].preload, q_cmd[hd].os, q_loaded[hd]) && !head_loading) begin
      pl_target_valid = 1'b1;
      pl_target = q_cmd[hd];
      pl_target_free = !streaming_buf_busy[q_cmd[hd].wbuf];
    end else if (q_valid[h1] && needs_load(q_cmd[h1].preload, q_cmd[h1].os, q_loaded[h1]) && !second_loading && !head_pending) begin
      pl_target_valid = 1'b1;
      pl_target_entry = h1;
      pl_target = q_cmd[h1];
      pl_target_free = !streaming_buf_busy[q_cmd[h1].wbuf] && !(q_valid[hd] && q_cmd[hd].wbuf == q_cmd[h1].wbuf);
    end else if (in_take && needs_load(in_cmd.preload, in_cmd.os, 1'b0) && !head_pending && !second_pending) begin
      pl_target_valid = 1'b1;
      pl_target_entry = wr_idx;
      pl_target_free = !streaming_buf_busy[in_cmd.wbuf] && !(q_valid[hd] && q_cmd[hd].wbuf == in_cmd.wbuf) &&
          !(q_valid[h1] && q_cmd[h1].wbuf == in_cmd.wbuf);
    end
  end
  assign pl_req = pl_target_valid && pl_target_free && (!ld_active || ld_last);
  logic pl_go;
  assign pl_go = pl_req && pl_grant;

  // Stream: the oldest instruction, once its weights are in (or will be after
  // this cycle) and the previous stream reads its last row in this cycle.
  logic st_cand_valid, st_cand_is_in, st_cand_ready;
  cmd_t st_cand;
  always_comb begin
    st_cand_valid = q_valid[hd] || in_take;
    st_cand_is_in = !q_valid[hd];
    st_cand = q_valid[hd] ? q_cmd[hd] : in_cmd;
    if (q_valid[hd])
      st_cand_ready = !needs_load(q_cmd[hd].preload, q_cmd[hd].os, q_loaded[hd]) || (ld_last && ld_entry == hd);
    else st_cand_ready = !needs_load(in_cmd.preload, in_cmd.os, 1'b0);
  end
  logic stream_free;
  assign stream_free = st_state == S_IDLE ||
      (st_last && !st.os && !(st_cand_valid && st_cand.os));
  assign st_req = st_cand_valid && st_cand_ready && stream_free;
  logic st_go;
  assign st_go = st_req && st_grant;

  // ---- queue, loader and stream registers ----
  always_ff @(posedge clk) begin
    if (!rst_n) begin
      q_valid[0] <= 1'b0;
      q_valid[1] <= 1'b0;
      hd <= 1'b0;
    end else begin
      if (st_go && !st_cand_is_in) begin
        q_valid[hd] <= 1'b0;
        hd <= h1;
      end
      if (in_take && !(st_go && st_cand_is_in)) q_valid[wr_idx] <= 1'b1;
    end
    if (in_take) begin
      q_cmd[wr_idx] <= in_cmd;
      q_loaded[wr_idx] <= 1'b0;
    end
    if (ld_last) q_loaded[ld_entry] <= 1'b1;
  end

  always_ff @(posedge clk) begin
    if (!rst_n) begin
      ld_active <= 1'b0;
    end else if (pl_go) begin
      ld_active <= 1'b1;
    end else if (ld_last) begin
      ld_active <= 1'b0;
    end
    if (pl_go) begin
      ld_entry <= pl_target_entry;
      ld_buf <= pl_target.wbuf;
      ld_k <= pl_target.k;
      ld_n <= pl_target.n;
      ld_stride <= pl_target.wgt_stride;
      ld_addr <= pl_target.wgt;
      ld_cnt <= '0;
    end else if (ld_active) begin
      ld_addr <= ld_addr + ADDR_W'(ld_stride);
      ld_cnt <= ld_cnt + 1'b1;
    end
  end

  logic last_write;  // the stream instruction's (OS) last row is written this cycle
  always_ff @(posedge clk) begin
    if (!rst_n) begin
      st_state <= S_IDLE;
    end else begin
      unique case (st_state)
        S_IDLE, S_STREAM:
        if (st_go) st_state <= S_STREAM;
        else if (st_state == S_STREAM && st_last) st_state <= st.os ? S_FLUSH : S_IDLE;
        S_FLUSH: if (st_cnt == '0) st_state <= S_DRAIN;
        S_DRAIN: if (st_cnt == st.m - 1'b1) st_state <= S_WAIT;
        S_WAIT: if (last_write) st_state <= S_IDLE;
        default: st_state <= S_IDLE;
      endcase
    end
    if (st_go) begin
      st <= st_cand;
      st_cnt <= '0;
      a_addr <= st_cand.inp;
      b_addr <= st_cand.wgt;
      out_addr <= st_cand.acc;
    end else begin
      unique case (st_state)
        S_STREAM: begin
          // OS: the last MAC is LATENCY - 1 cycles after the last read.
          st_cnt <= st_last ? DIM_W'(LATENCY - 2) : st_cnt + 1'b1;
          a_addr <= a_addr + (st.os ? ADDR_W'(1) : ADDR_W'(st.inp_stride));
          b_addr <= b_addr + ADDR_W'(st.wgt_stride);
          if (!st.os) out_addr <= out_addr + ADDR_W'(st.acc_stride);
        end
        S_FLUSH: st_cnt <= st_cnt == '0 ? '0 : st_cnt - 1'b1;
        S_DRAIN: begin
          st_cnt <= st_cnt + 1'b1;
          out_addr <= out_addr + ADDR_W'(st.acc_stride);
        end
        default: ;
      endcase
    end
  end

  // ---- memory read requests ----
  logic st_reading;
  assign st_reading = st_state == S_STREAM;
  assign a_rd_en = st_reading;
  assign a_rd_addr = a_addr;
  assign a_rd_stride = st.os ? st.inp_stride : DIM_W'(1);
  assign b_rd_en = ld_active || (st_reading && st.os);
  assign b_rd_addr = ld_active ? ld_addr : b_addr;
  assign b_rd_row = ld_active ? ld_cnt : st_cnt;

  // Read data arrives one cycle after the request and is registered once more
  // at the engine's edge (a_data_q, b_data_q), so that the array's next state
  // depends on registers only. What the lanes need of their instruction (the
  // valid k or m, n, the buffer, the weight row) travels with the request.
  logic a_req_q, b_req_q, a_vld, b_vld;
  logic a_sel_req_q, a_sel_q, b_ws_req_q, b_ws_q, b_buf_req_q, b_buf_q;
  logic [DIM_W-1:0] a_lim_req_q, a_lim_q, b_n_req_q, b_n_q;
  logic [RW-1:0] b_row_req_q, b_row_q;
  logic [ROWS*IN_W-1:0] a_data_q;
  logic [COLS*IN_W-1:0] b_data_q;
  always_ff @(posedge clk) begin
    if (!rst_n) begin
      a_req_q <= 1'b0;
      b_req_q <= 1'b0;
      a_vld   <= 1'b0;
      b_vld   <= 1'b0;
    end else begin
      a_req_q <= a_rd_en;
      b_req_q <= b_rd_en;
      a_vld   <= a_req_q;
      b_vld   <= b_req_q;
    end
    a_lim_req_q <= st.os ? st.m : st.k;
    a_sel_req_q <= st.wbuf;
    b_ws_req_q <= ld_active;
    b_buf_req_q <= ld_buf;
    b_n_req_q <= ld_active ? ld_n : st.n;
    b_row_req_q <= b_rd_row[RW-1:0];
    a_lim_q <= a_lim_req_q;
    a_sel_q <= a_sel_req_q;
    b_ws_q <= b_ws_req_q;
    b_buf_q <= b_buf_req_q;
    b_n_q <= b_n_req_q;
    b_row_q <= b_row_req_q;
    a_data_q <= a_rd_data;
    b_data_q <= b_rd_data;
  end

  // ---- lanes: mask to the valid k (WS) or m (OS) inputs and n weights, then skew ----
  // Lanes are unpacked arrays (one element per array row or column).
  logic [IN_W-1:0] a_lane[ROWS], a_skewed[ROWS];
  logic a_sel_skewed[ROWS];
  logic [IN_W-1:0] b_lane[COLS], b_skewed[COLS];
  logic [RW+1:0] b_tag[COLS], b_tag_skewed[COLS];  // {valid WS load, buffer, row}
  logic w_ld_valid[COLS], w_ld_buf[COLS];
  logic [RW-1:0] w_ld_row[COLS];
  logic [ACC_W-1:0] v_top[COLS], v_bottom[COLS], deskewed[COLS], acc_row[COLS];

  for (genvar r = 0; r < ROWS; r++) begin : g_in
    assign a_lane[r] = a_vld && DIM_W'(r) < a_lim_q ? a_data_q[r*IN_W+:IN_W] : '0;
    ember_me_delay #(
        .WIDTH(IN_W + 1),
        .DEPTH(r)
    ) skew (
        .clk(clk),
        .d  ({a_sel_q, a_lane[r]}),
        .q  ({a_sel_skewed[r], a_skewed[r]})
    );
  end

  for (genvar c = 0; c < COLS; c++) begin : g_wgt
    assign b_lane[c] = b_vld && DIM_W'(c) < b_n_q ? b_data_q[c*IN_W+:IN_W] : '0;
    assign b_tag[c] = {b_vld && b_ws_q, b_buf_q, b_row_q};
    // The weights (OS: the vertical stream; WS: a load) and the WS load's tag,
    // skewed together so that column c loads one cycle after column c - 1.
    ember_me_delay #(
        .WIDTH(IN_W + RW + 2),
        .DEPTH(c)
    ) skew (
        .clk(clk),
        .d  ({b_tag[c], b_lane[c]}),
        .q  ({b_tag_skewed[c], b_skewed[c]})
    );
    assign w_ld_valid[c] = b_tag_skewed[c][RW+1];
    assign w_ld_buf[c] = b_tag_skewed[c][RW];
    assign w_ld_row[c] = b_tag_skewed[c][RW-1:0];
    assign v_top[c] = st.os ? {{(ACC_W - IN_W) {b_skewed[c][IN_W-1]}}, b_skewed[c]} : '0;
    ember_me_delay #(
        .WIDTH(ACC_W),
        .DEPTH(COLS - 1 - c)
    ) deskew (
        .clk(clk),
        .d  (v_bottom[c]),
        .q  (deskewed[c])
    );
  end

  // OS: zero the kept sums in the cycle after the stream starts (registered, so
  // that no array logic depends combinationally on a top-level input).
  logic clear_q;
  always_ff @(posedge clk) clear_q <= st_go && st_cand.os;

  ember_me_array #(
      .ROWS (ROWS),
      .COLS (COLS),
      .IN_W (IN_W),
      .ACC_W(ACC_W)
  ) array (
      .clk       (clk),
      .os_mode   (st.os),
      .clear     (clear_q),
      .w_ld_valid(w_ld_valid),
      .w_ld_row  (w_ld_row),
      .w_ld_buf  (w_ld_buf),
      .w_row     (b_skewed),
      .a_left    (a_skewed),
      .s_left    (a_sel_skewed),
      .v_top     (v_top),
      .v_bottom  (v_bottom),
      .rd_row    (st_cnt[RW-1:0]),
      .acc_row   (acc_row)
  );

  // ---- results: a WS row leaves the de-skew LATENCY cycles after its input
  // was requested, with the tag (output address, accumulate, n, last row of
  // its instruction) that entered the result pipeline with the request; an
  // OS row is read out each DRAIN cycle ----
  typedef struct packed {
    logic              valid;
    logic              last;
    logic              accumulate;
    logic [DIM_W-1:0]  n;
    logic [ADDR_W-1:0] addr;
  } res_t;
  res_t ws_pipe[LATENCY];
  /*verilator tracing_off*/
  res_t ws_pipe_d[LATENCY];  // next state: a copy, not traced
  /*verilator tracing_on*/
  res_t ws_in, res;
  assign ws_in = '{st_reading && !st.os, st_last, st.accumulate, st.n, out_addr};
  always_comb begin
    ws_pipe_d[0] = ws_in;
    for (int i = 1; i < LATENCY; i++) ws_pipe_d[i] = ws_pipe[i-1];
    if (!rst_n) for (int i = 0; i < LATENCY; i++) ws_pipe_d[i].valid = 1'b0;
  end
  always_ff @(posedge clk) ws_pipe <= ws_pipe_d;
  assign res = st.os ? '{st_state == S_DRAIN, st_cnt == st.m - 1'b1, st.accumulate, st.n, out_addr} :
      ws_pipe[LATENCY-1];

  // Output stage: read the old row while registering the result, add and write next cycle.
  logic out_valid_q, out_last_q, out_acc_q, done_q;
  logic [DIM_W-1:0] out_n_q;
  logic [ADDR_W-1:0] out_addr_q;
  logic [ACC_W-1:0] out_q[COLS];
  assign acc_rd_en   = res.valid && res.accumulate;
  assign acc_rd_addr = res.addr;
  always_ff @(posedge clk) begin
    if (!rst_n) begin
      out_valid_q <= 1'b0;
      done_q <= 1'b0;
    end else begin
      out_valid_q <= res.valid;
      done_q <= last_write;
    end
    out_last_q <= res.last;
    out_acc_q <= res.accumulate;
    out_n_q <= res.n;
    out_addr_q <= res.addr;
  end
  assign last_write = out_valid_q && out_last_q;

  assign acc_wr_en   = out_valid_q;
  assign acc_wr_addr = out_addr_q;
  for (genvar c = 0; c < COLS; c++) begin : g_out
    always_ff @(posedge clk) out_q[c] <= st.os ? acc_row[c] : deskewed[c];
    assign acc_wr_data[c*ACC_W+:ACC_W] = out_q[c] + (out_acc_q ? acc_rd_data[c*ACC_W+:ACC_W] : '0);
    assign acc_wr_mask[c] = DIM_W'(c) < out_n_q;
  end

  logic pipe_busy;
  always_comb begin
    pipe_busy = out_valid_q;
    for (int i = 0; i < LATENCY; i++) pipe_busy = pipe_busy || ws_pipe[i].valid;
  end
  assign busy = q_valid[0] || q_valid[1] || ld_active || st_state != S_IDLE || pipe_busy;
  assign done = done_q;
endmodule
