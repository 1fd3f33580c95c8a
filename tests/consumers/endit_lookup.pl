#!/usr/bin/perl
# What ENDIT's retriever makes of a tape hint file: which job (volume) each request goes to.
#
# Written for the tests from the lookup rule of neicnordic/endit tsmretriever.pl:
# - readtapelist(): the hint file is opened and `decode_json(<$tf>)` decodes its first line
#   (decode_json takes one scalar, so only one line is read); a parse failure is warned about
#   and no list is loaded;
# - the main loop: the requests are the entries of the request folder whose names are hex
#   digits (`grep { /^[0-9A-Fa-f]+$/ } readdir`), i.e. dCache pnfsids;
# - each request's tape is `$tapelist->{$req}{volid}`, with every run of characters other than
#   a-zA-Z0-9.- turned into one '_' (`tr/a-zA-Z0-9.-/_/cs`); a request not in the list goes to
#   the one job 'default'.
#
# Usage: endit_lookup.pl HINTFILE REQUESTDIR
# Prints "loaded N entries" (or "not loaded: REASON"), then one "REQUEST<TAB>TAPE" line per
# request, sorted by request.
use strict;
use warnings;
use JSON;

my ($hintfile, $requestdir) = @ARGV;
die "usage: $0 HINTFILE REQUESTDIR\n" unless defined $requestdir;

my $tapelist = {};
if (open my $fh, '<', $hintfile) {
    my $first = <$fh>;
    close $fh;
    my $decoded = eval { decode_json($first // '') };
    if ($@) {
        my $why = $@;
        $why =~ s/\s+at \S+ line \d+.*//s;
        print "not loaded: $why\n";
    } else {
        $tapelist = $decoded;
        print "loaded " . scalar(keys %{$tapelist}) . " entries\n";
    }
} else {
    print "not loaded: $!\n";
}

opendir(my $dh, $requestdir) or die "opendir $requestdir: $!\n";
my @requests = grep { /^[0-9A-Fa-f]+$/ } readdir($dh);
closedir($dh);

foreach my $req (sort @requests) {
    my $tape = 'default';
    if (my $volid = $tapelist->{$req}{volid}) {
        $tape = $volid;
        $tape =~ tr/a-zA-Z0-9.-/_/cs;
    }
    print "$req\t$tape\n";
}
