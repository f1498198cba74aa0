/* Unit tests for common/mime.c: the one image-type sniffer. */
#include "check.h"
#include "suites.h"

#include "../../common/mime.h"

static void sniff_by_magic(void)
{
    CHECK_STR(nsbox_mime_sniff("\x89PNG\r\n\x1a\n....", 12, "x.txt"), "image/png");
    CHECK_STR(nsbox_mime_sniff("\xff\xd8\xff\xe0", 4, "photo"), "image/jpeg");
    CHECK_STR(nsbox_mime_sniff("GIF87a..", 8, NULL), "image/gif");
    CHECK_STR(nsbox_mime_sniff("GIF89a..", 8, NULL), "image/gif");
    CHECK_STR(nsbox_mime_sniff("RIFF\x10\0\0\0WEBPVP8 ", 16, "a"), "image/webp");
}

/* Magic cut short, a RIFF that is no WEBP (a WAV), text: no image. */
static void sniff_refuses_lookalikes(void)
{
    CHECK(nsbox_mime_sniff("\x89PNG\r\n\x1a", 7, "a.bin") == NULL);
    CHECK(nsbox_mime_sniff("RIFF\x10\0\0\0WAVE", 12, "a.wav") == NULL);
    CHECK(nsbox_mime_sniff("RIFF\x10\0\0\0WE", 10, "a") == NULL);
    CHECK(nsbox_mime_sniff("hello", 5, "hello.png") == NULL);
    CHECK(nsbox_mime_sniff("", 0, "") == NULL);
    CHECK(nsbox_mime_sniff(NULL, 0, NULL) == NULL);
}

/* SVG has no magic: its name says it, as read_file always had it. */
static void sniff_svg_by_name(void)
{
    CHECK_STR(nsbox_mime_sniff("<svg/>", 6, "dir/pic.svg"), "image/svg+xml");
    CHECK(nsbox_mime_sniff("<svg/>", 6, ".svg") == NULL);
    CHECK(nsbox_mime_sniff("<svg/>", 6, "pic.svgz") == NULL);
}

static void from_name(void)
{
    CHECK_STR(nsbox_mime_from_name("plot.png"), "image/png");
    CHECK_STR(nsbox_mime_from_name("a/b/PHOTO.JPG"), "image/jpeg");
    CHECK_STR(nsbox_mime_from_name("x.jpeg"), "image/jpeg");
    CHECK_STR(nsbox_mime_from_name("x.gif"), "image/gif");
    CHECK_STR(nsbox_mime_from_name("x.webp"), "image/webp");
    CHECK_STR(nsbox_mime_from_name("x.Svg"), "image/svg+xml");
    CHECK(nsbox_mime_from_name(".png") == NULL);
    CHECK(nsbox_mime_from_name("png") == NULL);
    CHECK(nsbox_mime_from_name("x.png.txt") == NULL);
    CHECK(nsbox_mime_from_name(NULL) == NULL);
}

void suite_mime(void)
{
    RUN_TEST(sniff_by_magic);
    RUN_TEST(sniff_refuses_lookalikes);
    RUN_TEST(sniff_svg_by_name);
    RUN_TEST(from_name);
}
