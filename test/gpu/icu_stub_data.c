/* An empty ICU common-data library for the GPU bundle (test/gpu/bundle.sh):
 * the same entry point as ICU's own "stubdata" library (an empty table of
 * contents), in place of Debian's 31 MB libicudata. kern uses ICU only for
 * text (--tokenizer: NFC normalization, u_charAge), whose data is compiled
 * into libicuuc itself, so text still works with this stub (the rehearsal
 * test checks it); an ICU service that needs the data file would return an
 * ICU error (U_MISSING_RESOURCE_ERROR), not crash.
 * Compile with -DKERN_ICU_ENTRY=icudt<major>_dat for the bundled libicuuc. */
#include <stdint.h>
#include <unicode/udata.h>

#ifndef KERN_ICU_ENTRY
#error "define KERN_ICU_ENTRY (e.g. icudt72_dat)"
#endif

/* ICU's ICU_Data_Header (common/ucmndata.h, not installed): a mapped-data
 * header, the "ToCP" data info, 8 bytes of padding, then the TOC count. */
struct kern_icu_data_header {
  uint16_t header_size;
  uint8_t magic1, magic2;
  UDataInfo info;
  char padding[8];
  uint32_t count, reserved;
  struct { const char* name; const void* data; } entry[1];
};

__attribute__((visibility("default"))) const struct kern_icu_data_header KERN_ICU_ENTRY = {
    32, 0xda, 0x27,
    {sizeof(UDataInfo), 0, U_IS_BIG_ENDIAN, U_CHARSET_FAMILY, sizeof(UChar), 0,
     {0x54, 0x6f, 0x43, 0x50} /* "ToCP" */, {1, 0, 0, 0}, {0, 0, 0, 0}},
    {0, 0, 0, 0, 0, 0, 0, 0},
    0, 0,
    {{0, 0}}};
