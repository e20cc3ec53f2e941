# Lab self-check (tests the lab, not domprof; scripts/test.sh counts it
# apart): libvirt inside the lab host: libvirtd runs, a domain defined from
# lab_guest_xml boots under KVM with its agent channel, metadata can be set
# and read back, and the domain stops.
lab_require_kvm
lab_start_libvirtd
mkdir -p "$LAB_RUN"
V="virsh -q -c qemu:///system"
lab_guest_xml web 6b1b1d6e-0000-4000-8000-000000000011 busy >/tmp/web.xml
timeout 30 $V define /tmp/web.xml || lab_fail "virsh define failed"
t=$(lab_now)
lab_now >"$LAB_RUN/web.start"
timeout 60 $V start web || lab_fail "virsh start failed"
pgrep -f 'guest=web' >"$LAB_RUN/web.pid" || lab_fail "no QEMU process for web"
wait_guest_booted web
lab_summary libvirt_l2_boot_s "$(lab_since "$t")"
grep -q "name $LAB_AGENT_PORT" "$RESULTS/web.console" || lab_fail "web does not see its agent port"
[ -S "$LAB_RUN/web.agent" ] || lab_fail "no agent socket $LAB_RUN/web.agent"
timeout 30 $V metadata web --uri https://domprof.org/ns/1 --key domprof \
	--set '<profile enabled="yes"/>' || lab_fail "virsh metadata --set failed"
timeout 30 $V metadata web --uri https://domprof.org/ns/1 | tee "$RESULTS/metadata.xml"
grep -q 'enabled="yes"' "$RESULTS/metadata.xml" || lab_fail "metadata did not read back"
timeout 30 $V destroy web || lab_fail "virsh destroy failed"
timeout 30 $V undefine web
lab_log "PASS: libvirt domain booted, channel present, metadata round trip"
