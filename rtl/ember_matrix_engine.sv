// The Ember NPU's matrix engine (docs/npu/rtl.md): a ROWS x COLS systolic array
// of int8 MAC processing elements with int32 accumulation, plus the control
// that executes one gemm instruction (docs/npu/isa.md):
//
//   acc[acc_addr + i*acc_stride + j] = (accumulate ? acc[...] : 0)
//                                      + sum_t inp[inp_addr + i*inp_stride + t] * W[t][j]
//
// Weight-stationary (os_mode = 0; k <= ROWS, n <= COLS): PRELOAD reads the k
// weight rows (if preload) into the PEs, one row a cycle; STREAM reads the m
// input rows, one a cycle, skewed so that element t enters array row t t cycles
// later; partial sums leave the bottom, are de-skewed and written.
// Output-stationary (os_mode = 1; m <= ROWS, n <= COLS): STREAM reads input
// column t and weight row t for t < k, both skewed; after the wave has crossed
// the array (FLUSH), DRAIN reads the m kept rows out, one a cycle.
// Every result row passes one output stage: read the old accumulator row (if
// accumulate), add, write the n valid lanes.
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
    // One instruction, sampled when start is high in IDLE or in the FINISH cycle.
    input  logic                   start,
    input  logic                   os_mode,
    input  logic                   accumulate,
    input  logic                   preload,
    input  logic [      DIM_W-1:0] m,
    input  logic [      DIM_W-1:0] k,
    input  logic [      DIM_W-1:0] n,
    input  logic [     ADDR_W-1:0] inp_addr,
    input  logic [      DIM_W-1:0] inp_stride,
    input  logic [     ADDR_W-1:0] wgt_addr,
    input  logic [      DIM_W-1:0] wgt_stride,
    input  logic [     ADDR_W-1:0] acc_addr,
    input  logic [      DIM_W-1:0] acc_stride,
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
  localparam int LATENCY = ROWS + COLS + 1;  // read issue to de-skewed result row

  typedef enum logic [2:0] {
    IDLE,
    PRELOAD,
    STREAM,
    FLUSH,
    DRAIN,
    WAIT,
    FINISH
  } state_t;

  state_t state;
  logic os_q, accumulate_q;
  logic [DIM_W-1:0] m_q, k_q, n_q, inp_stride_q, wgt_stride_q, acc_stride_q;
  logic [DIM_W-1:0] cnt;  // rows issued (PRELOAD, STREAM), countdown (FLUSH), row read (DRAIN)
  logic [DIM_W-1:0] wr_cnt;  // result rows written
  logic [ADDR_W-1:0] a_addr, b_addr, out_addr;
  logic out_valid_q;
  logic [ADDR_W-1:0] out_addr_q;
  logic [ACC_W-1:0] out_q[COLS];

  logic accepted, last_issue, last_write;
  logic [DIM_W-1:0] stream_len;
  assign accepted = (state == IDLE || state == FINISH) && start;  // FINISH is the last cycle
  assign stream_len = os_q ? k_q : m_q;
  assign last_issue = cnt == stream_len - 1'b1;
  assign last_write = out_valid_q && wr_cnt == m_q - 1'b1;

  // ---- control ----
  always_ff @(posedge clk) begin
    if (!rst_n) begin
      state <= IDLE;
      cnt   <= '0;
    end else begin
      unique case (state)
        IDLE, FINISH:
        if (start) begin
          cnt   <= '0;
          state <= preload && !os_mode ? PRELOAD : STREAM;
        end else begin
          state <= IDLE;
        end
        PRELOAD: begin
          cnt <= cnt == k_q - 1'b1 ? '0 : cnt + 1'b1;
          if (cnt == k_q - 1'b1) state <= STREAM;
        end
        STREAM:
        if (last_issue) begin
          cnt   <= os_q ? DIM_W'(LATENCY - 2) : '0;  // last MAC LATENCY - 1 cycles after the last read
          state <= os_q ? FLUSH : WAIT;
        end else begin
          cnt <= cnt + 1'b1;
        end
        FLUSH:
        if (cnt == '0) state <= DRAIN;
        else cnt <= cnt - 1'b1;
        DRAIN: begin
          cnt <= cnt + 1'b1;
          if (cnt == m_q - 1'b1) state <= WAIT;
        end
        WAIT: if (last_write) state <= FINISH;
        default: state <= IDLE;
      endcase
    end
  end

  always_ff @(posedge clk) begin
    if (accepted) begin
      os_q <= os_mode;
      accumulate_q <= accumulate;
      m_q <= m;
      k_q <= k;
      n_q <= n;
      inp_stride_q <= inp_stride;
      wgt_stride_q <= wgt_stride;
      acc_stride_q <= acc_stride;
      a_addr <= inp_addr;
      b_addr <= wgt_addr;
    end else begin
      if (a_rd_en) a_addr <= a_addr + (os_q ? ADDR_W'(1) : ADDR_W'(inp_stride_q));
      if (b_rd_en) b_addr <= b_addr + ADDR_W'(wgt_stride_q);
    end
  end

  assign busy = state != IDLE && state != FINISH;
  assign done = state == FINISH;

  // ---- memory read requests ----
  assign a_rd_en = state == STREAM;
  assign a_rd_addr = a_addr;
  assign a_rd_stride = os_q ? inp_stride_q : DIM_W'(1);
  assign b_rd_en = state == PRELOAD || (state == STREAM && os_q);
  assign b_rd_addr = b_addr;
  assign b_rd_row = cnt;

  // Read data arrives one cycle after the request and is registered once more
  // at the engine's edge (a_data_q, b_data_q), so that the array's next state
  // depends on registers only.
  logic a_req_q, b_req_q, a_vld, b_vld;
  logic [DIM_W-1:0] b_row_req_q, b_row_q;
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
    b_row_req_q <= b_rd_row;
    b_row_q <= b_row_req_q;
    a_data_q <= a_rd_data;
    b_data_q <= b_rd_data;
  end

  // ---- lanes: mask to the valid k (WS) or m (OS) inputs and n weights, then skew ----
  logic [DIM_W-1:0] a_lim;
  assign a_lim = os_q ? m_q : k_q;
  // Lanes are unpacked arrays (one element per array row or column).
  logic [IN_W-1:0] a_lane[ROWS], a_skewed[ROWS];
  logic [IN_W-1:0] b_lane[COLS], b_skewed[COLS];
  logic [ACC_W-1:0] v_top[COLS], v_bottom[COLS], deskewed[COLS], acc_row[COLS];
  logic [ROWS-1:0] w_load_row;

  for (genvar r = 0; r < ROWS; r++) begin : g_in
    assign a_lane[r] = a_vld && DIM_W'(r) < a_lim ? a_data_q[r*IN_W+:IN_W] : '0;
    ember_me_delay #(
        .WIDTH(IN_W),
        .DEPTH(r)
    ) skew (
        .clk(clk),
        .d  (a_lane[r]),
        .q  (a_skewed[r])
    );
    assign w_load_row[r] = b_vld && !os_q && b_row_q == DIM_W'(r);
  end

  for (genvar c = 0; c < COLS; c++) begin : g_wgt
    assign b_lane[c] = b_vld && DIM_W'(c) < n_q ? b_data_q[c*IN_W+:IN_W] : '0;
    ember_me_delay #(
        .WIDTH(IN_W),
        .DEPTH(c)
    ) skew (
        .clk(clk),
        .d  (b_lane[c]),
        .q  (b_skewed[c])
    );
    assign v_top[c] = os_q ? {{(ACC_W - IN_W) {b_skewed[c][IN_W-1]}}, b_skewed[c]} : '0;
    ember_me_delay #(
        .WIDTH(ACC_W),
        .DEPTH(COLS - 1 - c)
    ) deskew (
        .clk(clk),
        .d  (v_bottom[c]),
        .q  (deskewed[c])
    );
  end

  // OS: zero the kept sums in the first cycle after the start (registered, so
  // that no array logic depends combinationally on a top-level input).
  logic clear_q;
  always_ff @(posedge clk) clear_q <= accepted;

  ember_me_array #(
      .ROWS (ROWS),
      .COLS (COLS),
      .IN_W (IN_W),
      .ACC_W(ACC_W)
  ) array (
      .clk       (clk),
      .os_mode   (os_q),
      .clear     (clear_q),
      .w_load_row(w_load_row),
      .w_row     (b_lane),
      .a_left    (a_skewed),
      .v_top     (v_top),
      .v_bottom  (v_bottom),
      .rd_row    (cnt[RW-1:0]),
      .acc_row   (acc_row)
  );

  // ---- results: a WS row leaves the de-skew LATENCY cycles after its input
  // was requested; an OS row is read out each DRAIN cycle ----
  logic [LATENCY-1:0] ws_pipe;
  always_ff @(posedge clk) begin
    if (!rst_n) ws_pipe <= '0;
    else ws_pipe <= {ws_pipe[LATENCY-2:0], a_rd_en && !os_q};
  end

  logic res_valid;
  assign res_valid = os_q ? state == DRAIN : ws_pipe[LATENCY-1];

  // Output stage: read the old row while registering the result, add and write next cycle.
  assign acc_rd_en   = res_valid && accumulate_q;
  assign acc_rd_addr = out_addr;
  always_ff @(posedge clk) begin
    if (!rst_n) out_valid_q <= 1'b0;
    else out_valid_q <= res_valid;
    if (accepted) begin
      out_addr <= acc_addr;
      wr_cnt   <= '0;
    end else begin
      if (res_valid) out_addr <= out_addr + ADDR_W'(acc_stride_q);
      if (out_valid_q) wr_cnt <= wr_cnt + 1'b1;
    end
    out_addr_q <= out_addr;
  end

  assign acc_wr_en   = out_valid_q;
  assign acc_wr_addr = out_addr_q;
  for (genvar c = 0; c < COLS; c++) begin : g_out
    always_ff @(posedge clk) out_q[c] <= os_q ? acc_row[c] : deskewed[c];
    assign acc_wr_data[c*ACC_W+:ACC_W] =
        out_q[c] + (accumulate_q ? acc_rd_data[c*ACC_W+:ACC_W] : '0);
    assign acc_wr_mask[c] = DIM_W'(c) < n_q;
  end
endmodule
