/* Runs an Ember cpu AOT bundle: model.o + model.h from
 *   ember compile MODEL.onnx --backend cpu -o model.o --header model.h
 * linked with the AOT runtime library. No compiler, no LLVM at run time.
 *
 *   aot_example INPUT_0.npy [INPUT_1.npy ...] OUT_DIR
 * reads each input's data from an .npy file (its bytes must match the
 * header's size), runs the model and writes each output's raw bytes to
 * OUT_DIR/<output name>.bin; f32 outputs are also printed (first values). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "model.h"

/* The data of an .npy file (format 1.x or 2.x): the bytes after the header. */
static void* read_npy_data(const char* path, size_t expected_bytes) {
  FILE* f = fopen(path, "rb");
  if (!f) {
    fprintf(stderr, "%s: cannot open\n", path);
    return NULL;
  }
  unsigned char magic[10];
  if (fread(magic, 1, 10, f) != 10 || memcmp(magic, "\x93NUMPY", 6) != 0) {
    fprintf(stderr, "%s: not an .npy file\n", path);
    fclose(f);
    return NULL;
  }
  long header_end;
  if (magic[6] == 1) {
    header_end = 10 + (magic[8] | (magic[9] << 8));
  } else {
    unsigned char more[2];
    if (fread(more, 1, 2, f) != 2) {
      fclose(f);
      return NULL;
    }
    header_end = 12 + (long)(magic[8] | (magic[9] << 8) | (more[0] << 16) | ((unsigned long)more[1] << 24));
  }
  fseek(f, 0, SEEK_END);
  long size = ftell(f) - header_end;
  if (size != (long)expected_bytes) {
    fprintf(stderr, "%s: %ld data bytes, the model expects %zu\n", path, size, expected_bytes);
    fclose(f);
    return NULL;
  }
  void* data = malloc(expected_bytes);
  fseek(f, header_end, SEEK_SET);
  if (fread(data, 1, expected_bytes, f) != expected_bytes) {
    fprintf(stderr, "%s: short read\n", path);
    free(data);
    data = NULL;
  }
  fclose(f);
  return data;
}

int main(int argc, char** argv) {
  static const char* const input_names[] = MODEL_INPUT_NAMES;
  static const size_t input_bytes[] = MODEL_INPUT_BYTES_LIST;
  static const char* const output_names[] = MODEL_OUTPUT_NAMES;
  static const size_t output_bytes[] = MODEL_OUTPUT_BYTES_LIST;
  if (argc != MODEL_NUM_INPUTS + 2) {
    fprintf(stderr, "usage: %s", argv[0]);
    for (int i = 0; i < MODEL_NUM_INPUTS; ++i) fprintf(stderr, " %s.npy", input_names[i]);
    fprintf(stderr, " OUT_DIR\n");
    return 2;
  }
  const void* inputs[MODEL_NUM_INPUTS];
  void* outputs[MODEL_NUM_OUTPUTS];
  for (int i = 0; i < MODEL_NUM_INPUTS; ++i)
    if (!(inputs[i] = read_npy_data(argv[1 + i], input_bytes[i]))) return 1;
  for (int i = 0; i < MODEL_NUM_OUTPUTS; ++i) outputs[i] = malloc(output_bytes[i]);
  void* scratch = malloc(MODEL_SCRATCH_BYTES);

  if (model_run(inputs, outputs, scratch) != 0) {
    fprintf(stderr, "model_run failed: %s\n", ember_aot_last_error());
    return 1;
  }

  const char* out_dir = argv[argc - 1];
  for (int i = 0; i < MODEL_NUM_OUTPUTS; ++i) {
    char path[4096];
    snprintf(path, sizeof path, "%s/%s.bin", out_dir, output_names[i]);
    FILE* f = fopen(path, "wb");
    if (!f || fwrite(outputs[i], 1, output_bytes[i], f) != output_bytes[i]) {
      fprintf(stderr, "%s: cannot write\n", path);
      return 1;
    }
    fclose(f);
    printf("%s:", output_names[i]);
    if (i == 0 && strcmp(MODEL_OUTPUT_0_TYPE, "f32") == 0)
      for (size_t k = 0; k < output_bytes[i] / 4 && k < 10; ++k) printf(" %g", ((const float*)outputs[i])[k]);
    printf(" (%zu bytes) -> %s\n", output_bytes[i], path);
  }
  for (int i = 0; i < MODEL_NUM_INPUTS; ++i) free((void*)inputs[i]);
  for (int i = 0; i < MODEL_NUM_OUTPUTS; ++i) free(outputs[i]);
  free(scratch);
  return 0;
}
