// What dCache's bring-online scheduler sees in a tape info folder, for a list of SURLs.
//
// Written for the tests from dCache/dcache, modules/srm-server/src/main/java/org/dcache/srm/:
// - scheduler/strategy/TapeRecallSchedulingStrategy.java `add`: a request is keyed by its
//   SURL's raw path (java.net.URI#getRawPath), and files and tapes are asked for by those keys;
// - taperecallscheduling/tapeinfoprovider/JsonFileTapeInfoProvider.java: tapes.json and
//   tapefiles.json are read with Gson into a Map (numbers become Double); a tape needs Double
//   "capacity" and "filled", a file Double "size" and String "tapeid" (both taken with
//   longValue()); an entry without them stops the reading and nothing of that file is kept;
// - taperecallscheduling/tapeinfoprovider/CsvFileTapeInfoProvider.java: tapes.txt and
//   tapefiles.txt are read a line at a time, trimmed and split at every comma; a line without
//   exactly three parts stops the reading and nothing is kept; numbers are parsed as long after
//   every '.' is removed;
// - FilebasedTapeInfoProvider.java: a lookup returns the entries whose key equals a name asked.
//
// Usage: java TapeInfoRead DIR json|csv < surls
// Prints per SURL "file<TAB>RAWPATH<TAB>TAPE<TAB>SIZE_KB" (or "file<TAB>RAWPATH<TAB>-"), then
// per tape found "tape<TAB>NAME<TAB>CAPACITY_KB<TAB>FILLED_KB" (or "tape<TAB>NAME<TAB>-").
import com.google.gson.GsonBuilder;
import java.io.BufferedReader;
import java.io.File;
import java.io.InputStreamReader;
import java.io.Reader;
import java.net.URI;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Paths;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.Scanner;
import java.util.TreeSet;

public class TapeInfoRead {
    static Map<String, long[]> tapes = new HashMap<>();
    static Map<String, Object[]> files = new HashMap<>();

    @SuppressWarnings("unchecked")
    static void readJson(String dir) throws Exception {
        File tapeFile = new File(dir, "tapes.json");
        if (tapeFile.isFile()) {
            try (Reader reader = Files.newBufferedReader(tapeFile.toPath())) {
                Map<String, ?> parsed = new GsonBuilder().create().fromJson(reader, Map.class);
                Map<String, long[]> found = new HashMap<>();
                boolean complete = true;
                for (Map.Entry<String, ?> entry : parsed.entrySet()) {
                    Map<String, Double> info = (Map<String, Double>) entry.getValue();
                    Double capacity = info.get("capacity");
                    Double filled = info.get("filled");
                    if (entry.getKey().isEmpty() || capacity == null || filled == null) {
                        complete = false;
                        break;
                    }
                    found.put(entry.getKey(), new long[] {capacity.longValue(), filled.longValue()});
                }
                if (complete) {
                    tapes = found;
                }
            }
        }
        File fileFile = new File(dir, "tapefiles.json");
        if (fileFile.isFile()) {
            try (Reader reader = Files.newBufferedReader(fileFile.toPath())) {
                Map<String, ?> parsed = new GsonBuilder().create().fromJson(reader, Map.class);
                Map<String, Object[]> found = new HashMap<>();
                boolean complete = true;
                for (Map.Entry<String, ?> entry : parsed.entrySet()) {
                    Map<String, ?> info = (Map<String, ?>) entry.getValue();
                    Double size = (Double) info.get("size");
                    String tape = (String) info.get("tapeid");
                    if (entry.getKey().isEmpty() || size == null || tape == null) {
                        complete = false;
                        break;
                    }
                    found.put(entry.getKey(), new Object[] {size.longValue(), tape});
                }
                if (complete) {
                    files = found;
                }
            }
        }
    }

    static List<String[]> csvLines(File file) throws Exception {
        List<String[]> lines = new ArrayList<>();
        try (Scanner scanner = new Scanner(file)) {
            while (scanner.hasNextLine()) {
                String[] parts = scanner.nextLine().trim().split(",");
                if (parts.length != 3) {
                    return null;
                }
                lines.add(parts);
            }
        }
        return lines;
    }

    static void readCsv(String dir) throws Exception {
        File tapeFile = new File(dir, "tapes.txt");
        List<String[]> lines = tapeFile.isFile() ? csvLines(tapeFile) : null;
        if (lines != null) {
            for (String[] p : lines) {
                tapes.put(p[0], new long[] {
                    Long.parseLong(p[1].replaceAll("\\.", "")),
                    Long.parseLong(p[2].replaceAll("\\.", ""))});
            }
        }
        File fileFile = new File(dir, "tapefiles.txt");
        lines = fileFile.isFile() ? csvLines(fileFile) : null;
        if (lines != null) {
            for (String[] p : lines) {
                files.put(p[0], new Object[] {Long.parseLong(p[1].replaceAll("\\.", "")), p[2]});
            }
        }
    }

    public static void main(String[] args) throws Exception {
        if (args[1].equals("json")) {
            readJson(args[0]);
        } else {
            readCsv(args[0]);
        }
        BufferedReader in = new BufferedReader(new InputStreamReader(System.in, StandardCharsets.UTF_8));
        TreeSet<String> seenTapes = new TreeSet<>();
        String line;
        while ((line = in.readLine()) != null) {
            if (line.isEmpty()) {
                continue;
            }
            String rawPath = new URI(line).getRawPath();
            Object[] info = files.get(rawPath);
            if (info == null) {
                System.out.println("file\t" + rawPath + "\t-");
            } else {
                System.out.println("file\t" + rawPath + "\t" + info[1] + "\t" + info[0]);
                seenTapes.add((String) info[1]);
            }
        }
        for (String tape : seenTapes) {
            long[] info = tapes.get(tape);
            System.out.println("tape\t" + tape + (info == null ? "\t-" : "\t" + info[0] + "\t" + info[1]));
        }
    }
}
