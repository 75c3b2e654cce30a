package data

import (
	"bufio"
	"bytes"
	"compress/gzip"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"math/bits"
	"strings"

	"github.com/andybalholm/brotli"
	"github.com/klauspost/compress/snappy"
	"github.com/klauspost/compress/zstd"
	"github.com/parquet-go/parquet-go"
	"github.com/parquet-go/parquet-go/encoding/thrift"
	"github.com/parquet-go/parquet-go/format"
	"github.com/pierrec/lz4/v4"
)

// A Parquet file from a stranger is checked here, page by page, before
// parquet-go reads it. parquet-go trusts the sizes and counts a file
// states: it allocates the size a page header claims before reading the
// page, the decompressed size a page or its codec claims, the values a
// run of repeated levels or dictionary indices claims, and the elements a
// list of the footer claims; it recurses once per level of nesting of the
// footer; and it decompresses a damaged LZ4 page into an ever doubling
// buffer. Files of a few dozen bytes made it allocate gigabytes, and an
// 8 MB footer or a damaged LZ4 page crashed the program (a fatal error,
// not an error a caller sees). Each check bounds one of these by the
// file's own size or by one of the limits below, far above what the HF
// hub's files hold (pyarrow cuts their pages at about 1 MiB).
const (
	// maxParquetPageBytes bounds a page's bytes, decompressed. A page
	// holds at least one value, so a page past 1 MiB is one large value
	// (an image) or a few.
	maxParquetPageBytes = 256 << 20
	// maxParquetPageValues bounds the values a page holds, nulls included.
	maxParquetPageValues = 1 << 24
	// maxParquetRowGroupBytes bounds what reading a row of a row group
	// holds at once: each column's dictionary and one page of each
	// (decompressed, and 8 bytes a value for its offsets, levels and
	// indices). Without it, a few KB of zstd in each of a thousand
	// columns would stand for a thousand pages of maxParquetPageBytes.
	maxParquetRowGroupBytes = 1 << 30
	// maxThriftDepth bounds the nesting of the footer's and the page
	// headers' structures (the format's own nest a few levels).
	maxThriftDepth = 64
)

// checkParquetMetadata checks the footer of a file of size bytes whose
// tail checkParquetFooter has checked: parquet-go's decoder can then
// neither recurse deeper than maxThriftDepth nor allocate more list
// elements than the footer has bytes.
func checkParquetMetadata(f io.ReaderAt, size int64) error {
	var tail [4]byte
	if _, err := f.ReadAt(tail[:], size-8); err != nil {
		return err
	}
	n := int64(binary.LittleEndian.Uint32(tail[:]))
	s := thriftScan{r: bufio.NewReader(io.NewSectionReader(f, size-8-n, n)), left: n}
	if err := s.structure(0); err != nil {
		return fmt.Errorf("footer: %w", err)
	}
	return nil
}

// checkParquetPages walks every page of every column chunk of pf as
// parquet-go reads them (from the chunk's dictionary page, or its first
// data page, for its total_compressed_size bytes) and checks each before
// parquet-go allocates anything for it: its header decodes within the
// chunk, its data lies within the chunk, it holds at most
// maxParquetPageValues values and decompresses to at most
// maxParquetPageBytes, and its runs of levels and dictionary indices hold
// no more values than the page. Pages are decompressed here once more
// than parquet-go does: the price of knowing their size.
func checkParquetPages(f io.ReaderAt, size int64, pf *parquet.File) error {
	schema := pf.Schema()
	leaves := schema.Columns()
	var pc pageChecker
	defer pc.close()
	for g, rg := range pf.Metadata().RowGroups {
		var held int64 // what reading a row holds: each column's dictionary and largest page
		for c := range rg.Columns {
			md := &rg.Columns[c].MetaData
			var leaf parquet.LeafColumn
			if c < len(leaves) {
				leaf, _ = schema.Lookup(leaves[c]...)
			}
			cost, err := pc.chunk(f, size, md, leaf)
			if err != nil {
				return fmt.Errorf("row group %d, column %q: %w", g, strings.Join(md.PathInSchema, "."), err)
			}
			if held += cost; held > maxParquetRowGroupBytes {
				return fmt.Errorf("row group %d: its columns' pages take more than %d bytes together (decompressed), the most a row group's may", g, maxParquetRowGroupBytes)
			}
		}
	}
	return nil
}

// pageChecker holds what checking pages reuses from one to the next.
type pageChecker struct {
	br     *bufio.Reader
	header []byte // the page header's bytes
	data   []byte // the page's bytes as stored
	out    []byte // the page's bytes decompressed
	zstd   *zstd.Decoder
}

func (pc *pageChecker) close() {
	if pc.zstd != nil {
		pc.zstd.Close()
	}
}

// chunk checks the pages of one column chunk and returns what reading it
// holds at once: its dictionary and its largest page, decompressed, and 8
// bytes a value of each.
func (pc *pageChecker) chunk(f io.ReaderAt, size int64, md *format.ColumnMetaData, leaf parquet.LeafColumn) (int64, error) {
	start := md.DataPageOffset
	if md.DictionaryPageOffset != 0 {
		start = md.DictionaryPageOffset
	}
	if start < 0 || start > size || md.TotalCompressedSize < 0 {
		return 0, fmt.Errorf("its pages (%d bytes from byte %d) are not inside the file's %d bytes", md.TotalCompressedSize, start, size)
	}
	end := size // a section past the end of the file reads to its end, as parquet-go's
	if md.TotalCompressedSize < size-start {
		end = start + md.TotalCompressedSize
	}
	section := io.NewSectionReader(f, start, end-start)
	if pc.br == nil {
		pc.br = bufio.NewReader(section)
	} else {
		pc.br.Reset(section)
	}
	var dict, largest int64
	for pos, page := start, 0; pos < end; page++ {
		h, err := pc.pageHeader(end - pos)
		if err == nil {
			pos += int64(len(pc.header))
			err = checkPageHeader(h, end-pos)
		}
		if err == nil {
			pc.data = grow(pc.data, int(h.CompressedPageSize))
			_, err = io.ReadFull(pc.br, pc.data)
			pos += int64(h.CompressedPageSize)
		}
		var cost int64
		if err == nil {
			cost, err = pc.content(h, md.Codec, leaf)
		}
		if err != nil {
			return 0, fmt.Errorf("page %d: %w", page, unexpectedEOF(err))
		}
		if h.Type == format.DictionaryPage {
			dict += cost
		} else {
			largest = max(largest, cost)
		}
	}
	return dict + largest, nil
}

// pageHeader reads and checks the next page header (in the left bytes
// of its chunk), its bytes in pc.header.
func (pc *pageChecker) pageHeader(left int64) (*format.PageHeader, error) {
	pc.header = pc.header[:0]
	s := thriftScan{r: pc.br, left: left, keep: &pc.header}
	if err := s.structure(0); err != nil {
		return nil, fmt.Errorf("header: %w", err)
	}
	h := new(format.PageHeader)
	if err := thrift.Unmarshal(new(thrift.CompactProtocol), pc.header, h); err != nil {
		return nil, fmt.Errorf("header: %w", err)
	}
	return h, nil
}

// checkPageHeader checks a page header's sizes and counts, left being the
// bytes of its column chunk after it.
func checkPageHeader(h *format.PageHeader, left int64) error {
	switch {
	case h.CompressedPageSize < 0 || int64(h.CompressedPageSize) > left:
		return fmt.Errorf("its data claims %d bytes, and its column chunk has %d left", h.CompressedPageSize, left)
	case h.UncompressedPageSize < 0 || h.UncompressedPageSize > maxParquetPageBytes:
		return fmt.Errorf("it claims %d bytes decompressed: a page may have 0 to %d", h.UncompressedPageSize, maxParquetPageBytes)
	}
	var values int32
	switch h.Type {
	case format.DataPage:
		values = h.DataPageHeader.V.NumValues
	case format.DictionaryPage:
		values = h.DictionaryPageHeader.V.NumValues
	case format.DataPageV2:
		v2 := &h.DataPageHeaderV2.V
		values = v2.NumValues
		levels := int64(v2.RepetitionLevelsByteLength) + int64(v2.DefinitionLevelsByteLength)
		if v2.NumNulls < 0 || v2.NumNulls > v2.NumValues || v2.NumRows < 0 || v2.RepetitionLevelsByteLength < 0 ||
			v2.DefinitionLevelsByteLength < 0 || levels > int64(h.CompressedPageSize) {
			return fmt.Errorf("its counts are inconsistent (%d values, %d nulls, %d rows, levels of %d and %d bytes in %d)", v2.NumValues,
				v2.NumNulls, v2.NumRows, v2.RepetitionLevelsByteLength, v2.DefinitionLevelsByteLength, h.CompressedPageSize)
		}
	}
	if values < 0 || values > maxParquetPageValues {
		return fmt.Errorf("it claims %d values: a page may have 0 to %d", values, maxParquetPageValues)
	}
	return nil
}

// content checks the page in pc.data, its header h: it decompresses
// within the limit, and its runs hold no more values than it has. It
// returns what reading the page holds: its bytes decompressed, and 8 bytes
// a value.
func (pc *pageChecker) content(h *format.PageHeader, codec format.CompressionCodec, leaf parquet.LeafColumn) (int64, error) {
	var data []byte
	var values int32
	var err error
	switch h.Type {
	case format.DictionaryPage:
		values = h.DictionaryPageHeader.V.NumValues
		data, err = pc.dictionaryPage(h, codec)
	case format.DataPage:
		values = h.DataPageHeader.V.NumValues
		data, err = pc.dataPageV1(h, codec, leaf)
	case format.DataPageV2:
		values = h.DataPageHeaderV2.V.NumValues
		data, err = pc.dataPageV2(h, codec, leaf)
	} // parquet-go refuses the other pages' types (index pages) without reading them
	return int64(len(data)) + 8*int64(values), err
}

// dictionaryPage checks a dictionary page and returns its bytes
// decompressed.
func (pc *pageChecker) dictionaryPage(h *format.PageHeader, codec format.CompressionCodec) ([]byte, error) {
	dict := &h.DictionaryPageHeader.V
	data, err := pc.decompress(codec, pc.data, int(h.UncompressedPageSize))
	if err != nil {
		return nil, err
	}
	enc := dict.Encoding
	if enc == format.PlainDictionary { // PLAIN, as parquet-go reads it
		enc = format.Plain
	}
	return data, checkValues(enc, data, int64(dict.NumValues))
}

// dataPageV1 checks a version 1 data page (its levels compressed with its
// values) and returns its bytes decompressed.
func (pc *pageChecker) dataPageV1(h *format.PageHeader, codec format.CompressionCodec, leaf parquet.LeafColumn) ([]byte, error) {
	v1 := &h.DataPageHeader.V
	page, err := pc.decompress(codec, pc.data, int(h.UncompressedPageSize))
	if err != nil {
		return nil, err
	}
	n, data := int64(v1.NumValues), page
	for _, levels := range []struct {
		max int
		enc format.Encoding
	}{{leaf.MaxRepetitionLevel, v1.RepetitionLevelEncoding}, {leaf.MaxDefinitionLevel, v1.DefinitionLevelEncoding}} {
		if levels.max > 0 { // each level section has a 4-byte length, whatever its encoding
			if data, err = levelsV1(data, levels.max, levels.enc, n); err != nil {
				return nil, err
			}
		}
	}
	return page, checkValues(v1.Encoding, data, n)
}

// dataPageV2 checks a version 2 data page (its levels stored as they are,
// before its values) and returns its values' bytes decompressed.
func (pc *pageChecker) dataPageV2(h *format.PageHeader, codec format.CompressionCodec, leaf parquet.LeafColumn) ([]byte, error) {
	v2 := &h.DataPageHeaderV2.V
	n, rep, def := int64(v2.NumValues), int(v2.RepetitionLevelsByteLength), int(v2.DefinitionLevelsByteLength)
	if err := checkRuns(pc.data[:rep], levelWidth(leaf.MaxRepetitionLevel), n); err != nil {
		return nil, fmt.Errorf("repetition levels: %w", err)
	}
	if err := checkRuns(pc.data[rep:rep+def], levelWidth(leaf.MaxDefinitionLevel), n); err != nil {
		return nil, fmt.Errorf("definition levels: %w", err)
	}
	data := pc.data[rep+def:]
	if !v2.IsCompressed.Valid || v2.IsCompressed.V {
		var err error
		if data, err = pc.decompress(codec, data, int(h.UncompressedPageSize)-rep-def); err != nil {
			return nil, err
		}
	}
	return data, checkValues(v2.Encoding, data, n-int64(v2.NumNulls))
}

// levelsV1 checks the level section at the start of a version 1 data
// page of n values and returns what follows it.
func levelsV1(data []byte, maxLevel int, enc format.Encoding, n int64) ([]byte, error) {
	if len(data) < 4 {
		return nil, errors.New("levels: " + io.ErrUnexpectedEOF.Error())
	}
	size := int64(binary.LittleEndian.Uint32(data))
	if size > int64(len(data)-4) {
		return nil, fmt.Errorf("levels of %d bytes in the page's %d", size, len(data)-4)
	}
	if enc == format.RLE {
		if err := checkRuns(data[4:4+size], levelWidth(maxLevel), n); err != nil {
			return nil, fmt.Errorf("levels: %w", err)
		}
	}
	return data[4+size:], nil
}

// levelWidth is the bit width of levels up to maxLevel.
func levelWidth(maxLevel int) int { return bits.Len(uint(maxLevel)) }

// checkValues checks the values section of a data page of n values
// stored with enc.
func checkValues(enc format.Encoding, data []byte, n int64) error {
	switch enc {
	case format.Plain, format.ByteStreamSplit: // as long as its data: bounded by the file
		return nil
	case format.PlainDictionary, format.RLEDictionary: // a byte of bit width, then runs of indices
		if len(data) == 0 {
			return nil
		}
		return checkRuns(data[1:], int(data[0]), n)
	case format.RLE: // booleans: a 4-byte length, then runs of bits
		if len(data) < 4 || int64(binary.LittleEndian.Uint32(data)) > int64(len(data)-4) {
			return errors.New("RLE values: " + io.ErrUnexpectedEOF.Error())
		}
		return checkRuns(data[4:4+binary.LittleEndian.Uint32(data)], 1, n)
	case format.DeltaBinaryPacked, format.DeltaLengthByteArray: // a count of values parquet-go allocates, then deltas
		return checkDeltaCount(data, n)
	}
	// DELTA_BYTE_ARRAY repeats a prefix of the value before at will: a few
	// bytes may stand for gigabytes, which parquet-go allocates at once.
	// Neither pyarrow, which writes the HF hub's files, nor parquet-go uses
	// it unless asked.
	return fmt.Errorf("encoding %s is not supported (the HF hub's files use PLAIN, dictionary and DELTA_LENGTH_BYTE_ARRAY encodings)", enc)
}

// checkDeltaCount checks the header of a DELTA_BINARY_PACKED stream (the
// values or the lengths of a page of n values): it holds at most n values.
func checkDeltaCount(data []byte, n int64) error {
	var count uint64
	for range 3 { // the block size, the mini-blocks a block, the count
		u, k := binary.Uvarint(data)
		if k <= 0 {
			return errors.New("a damaged DELTA_BINARY_PACKED header")
		}
		count, data = u, data[k:]
	}
	if count > uint64(n) {
		return fmt.Errorf("its DELTA_BINARY_PACKED data claims %d values, and it has %d", count, n)
	}
	return nil
}

// checkRuns checks a run-length/bit-packed hybrid stream of values of
// width bits (levels, dictionary indices, booleans): its runs hold at most
// n values (bit-packed runs hold groups of 8: the last may be padding).
func checkRuns(data []byte, width int, n int64) error {
	if width > 32 {
		return fmt.Errorf("values of %d bits", width)
	}
	limit := (n + 7) &^ 7
	var values int64
	for i := 0; i < len(data); {
		u, k := binary.Uvarint(data[i:])
		if k <= 0 {
			return errors.New("a damaged run header")
		}
		i += k
		count, size := int64(u>>1), int64((width+7)/8)
		if u&1 == 1 { // bit-packed: count groups of 8 values
			count, size = 8*int64(u>>1), int64(u>>1)*int64(width)
		}
		if values += count; values > limit || count < 0 {
			return fmt.Errorf("its runs hold more than the page's %d values", n)
		}
		i += int(min(size, int64(len(data)-i)))
	}
	return nil
}

// decompress returns data decompressed with codec, or an error if that
// takes more than maxParquetPageBytes; size is the size the page header
// states, the buffer an LZ4 block needs. Codecs parquet-go does not know
// are left to it (it refuses them).
func (pc *pageChecker) decompress(codec format.CompressionCodec, data []byte, size int) (out []byte, err error) {
	switch codec {
	case format.Uncompressed:
		return data, nil
	case format.Snappy: // states its length, which parquet-go allocates before decoding
		var n int
		if n, err = snappy.DecodedLen(data); err == nil && n > maxParquetPageBytes {
			err = fmt.Errorf("it claims %d bytes decompressed: a page may have up to %d", n, maxParquetPageBytes)
		}
		if err == nil {
			pc.out = grow(pc.out, n)
			out, err = snappy.Decode(pc.out, data)
		}
	case format.Gzip:
		var zr *gzip.Reader
		if zr, err = gzip.NewReader(bytes.NewReader(data)); err == nil {
			out, err = pc.readLimited(zr)
		}
	case format.Brotli:
		out, err = pc.readLimited(brotli.NewReader(bytes.NewReader(data)))
	case format.Zstd: // its frames may state their size, which parquet-go allocates before decoding
		if pc.zstd == nil {
			pc.zstd, _ = zstd.NewReader(nil, zstd.WithDecoderConcurrency(1), zstd.WithDecoderMaxMemory(maxParquetPageBytes))
		}
		out, err = pc.zstd.DecodeAll(data, pc.out[:0])
	case format.Lz4Raw: // states no size: parquet-go doubles its buffer until the block fits, forever if it never does
		pc.out = grow(pc.out, max(size, 0))
		var n int
		if n, err = lz4.UncompressBlock(data, pc.out); err == nil {
			out = pc.out[:n]
		}
	default:
		return data, nil
	}
	if err != nil {
		return nil, fmt.Errorf("%s data: %w", codec, err)
	}
	pc.out = out
	return out, nil
}

// readLimited reads r to its end into pc's buffer, failing past
// maxParquetPageBytes.
func (pc *pageChecker) readLimited(r io.Reader) ([]byte, error) {
	buf := bytes.NewBuffer(pc.out[:0])
	n, err := buf.ReadFrom(io.LimitReader(r, maxParquetPageBytes+1))
	if err == nil && n > maxParquetPageBytes {
		err = fmt.Errorf("it decompresses to more than %d bytes: a page may have up to %d", maxParquetPageBytes, maxParquetPageBytes)
	}
	return buf.Bytes(), err
}

// grow returns b resized to n bytes.
func grow(b []byte, n int) []byte {
	if cap(b) < n {
		return make([]byte, n)
	}
	return b[:n]
}

// unexpectedEOF turns io.EOF, which a short read gives, into
// io.ErrUnexpectedEOF: the end came before what the file stated.
func unexpectedEOF(err error) error {
	if err == io.EOF {
		return io.ErrUnexpectedEOF
	}
	return err
}
