#!/bin/bash
# gpuclient's devstack plugin: installs the ``openstack gpu`` commands
# into a devstack cloud, so gpuclient can be gated on a real OpenStack (see
# doc/source/contributor/devstack.rst).
#
# devstack sources this file as "plugin.sh MODE [PHASE]" after
# devstack/settings.  gpuclient is a client: it runs no service, so only
# "stack install" (install it) and "stack extra" (check that the
# ``openstack`` command loads it and reaches Nova and Placement) do work;
# "clean" uninstalls it.

# Save trace setting
_XTRACE_GPUCLIENT=$(set +o | grep xtrace)
set -o xtrace

function install_gpuclient {
    # pip install -e $GPUCLIENT_DIR[profiles,metrics] with devstack's
    # upper constraints; it pulls in python-openstackclient, osc-lib and
    # openstacksdk if missing, gpu profile plan's solver (the profiles
    # extra: highspy, numpy) and -f openmetrics' writer (the metrics
    # extra: prometheus-client), which the functional tests use.
    setup_develop "$GPUCLIENT_DIR" profiles,metrics
}

function configure_gpuclient {
    # Nothing to write for gpuclient itself: it reads the cloud from
    # clouds.yaml like any other openstack command, and nova.conf's [pci]
    # alias is the operator's (local.conf post-config for $NOVA_CONF) --
    # except with the fake GPU hosts, whose alias and PCI-in-Placement
    # scheduling are the test cloud's (tools/cloud/etc/nova.conf).
    if [[ "$GPUCLIENT_FAKE_GPU_HOSTS" != "True" ]]; then
        return 0
    fi
    iniset "$NOVA_CONF" pci alias \
        '{"name": "h100", "vendor_id": "10de", "product_id": "2331", "device_type": "type-PCI", "numa_policy": "preferred"}'
    iniset "$NOVA_CONF" filter_scheduler pci_in_placement true
    local filters
    filters=$(iniget "$NOVA_CONF" filter_scheduler enabled_filters)
    if [[ -n "$filters" && ",$filters," != *",PciPassthroughFilter,"* ]]; then
        iniset "$NOVA_CONF" filter_scheduler enabled_filters \
            "$filters,PciPassthroughFilter"
    fi
}

# The python nova runs in (devstack's global venv when GLOBAL_VENV).
function _gpuclient_python {
    echo "${GPUCLIENT_NOVA_PYTHON:-${NOVA_BIN_DIR:-/usr/local/bin}/python3}"
}

function start_gpuclient_fake_gpu_hosts {
    # As devstack's own fake multi-compute (lib/nova start_nova_compute
    # with NUMBER_FAKE_NOVA_COMPUTE): a copy of $NOVA_CPU_CONF per host
    # with its own host name, plus the host's extra conf from
    # tools/cloud/hosts.py, run through tools/cloud/compute.py, which
    # makes tools/cloud/fakevirt.py loadable as nova.virt.gpufake.
    local entry name driver conf extra python
    python=$(_gpuclient_python)
    for entry in $GPUCLIENT_FAKE_GPU_HOST_LIST; do
        name=${entry%%:*}
        driver=${entry#*:}
        conf=$NOVA_CONF_DIR/nova-cpu-gpuclient-$name.conf
        extra=$NOVA_CONF_DIR/nova-cpu-gpuclient-$name-extra.conf
        cp "$NOVA_CPU_CONF" "$conf"
        iniset "$conf" DEFAULT host "$name"
        iniset "$conf" DEFAULT compute_driver "gpufake.$driver"
        # each its own state (the node identity file compute_id)
        iniset "$conf" DEFAULT state_path "$DATA_DIR/gpuclient-$name"
        mkdir -p "$DATA_DIR/gpuclient-$name"
        PYTHONPATH="$GPUCLIENT_DIR/tools" "$python" -c \
            'import sys; from cloud import hosts; print({h.name: h.extra_conf for h in hosts.HOSTS}.get(sys.argv[1], ""))' \
            "$name" > "$extra" \
            || die $LINENO "no extra conf for fake GPU host $name"
        run_process "gpuclient-cpu-$name" \
            "env PYTHONPATH=$GPUCLIENT_DIR/tools $python -m cloud.compute --config-file $conf --config-file $extra"
    done
    # map the new computes to the cell once they have registered
    local i
    for i in $(seq 1 60); do
        "$NOVA_BIN_DIR/nova-manage" cell_v2 discover_hosts --verbose || true
        if _gpuclient_fake_hosts_up; then
            return 0
        fi
        sleep 2
    done
    die $LINENO "the fake GPU hosts did not come up: see the" \
                "gpuclient-cpu-* service logs"
}

function _gpuclient_fake_hosts_up {
    local entry
    for entry in $GPUCLIENT_FAKE_GPU_HOST_LIST; do
        openstack --os-cloud devstack-admin hypervisor list -f value \
            -c "Hypervisor Hostname" | grep -q "^${entry%%:*}" || return 1
    done
}

function stop_gpuclient_fake_gpu_hosts {
    local entry
    for entry in $GPUCLIENT_FAKE_GPU_HOST_LIST; do
        stop_process "gpuclient-cpu-${entry%%:*}"
    done
}

function check_gpuclient {
    if [[ -z "$GPUCLIENT_CHECK_CLOUD" ]]; then
        return 0
    fi
    # Fails stack.sh when the plugin does not load or cannot read the
    # hypervisors and their Placement providers with admin credentials.
    openstack --os-cloud "$GPUCLIENT_CHECK_CLOUD" gpu host list \
        || die $LINENO "openstack gpu host list failed against cloud" \
                       "$GPUCLIENT_CHECK_CLOUD: is gpuclient installed" \
                       "from $GPUCLIENT_DIR?"
}

function unstack_gpuclient {
    # gpuclient runs no process; the fake GPU hosts are nova-computes
    if [[ "$GPUCLIENT_FAKE_GPU_HOSTS" == "True" ]]; then
        stop_gpuclient_fake_gpu_hosts
    fi
}

function clean_gpuclient {
    pip_uninstall gpuclient
}

if is_service_enabled gpuclient; then
    if [[ "$1" == "stack" && "$2" == "install" ]]; then
        echo_summary "Installing gpuclient"
        install_gpuclient
    elif [[ "$1" == "stack" && "$2" == "post-config" ]]; then
        echo_summary "Configuring gpuclient"
        configure_gpuclient
    elif [[ "$1" == "stack" && "$2" == "extra" ]]; then
        if [[ "$GPUCLIENT_FAKE_GPU_HOSTS" == "True" ]]; then
            echo_summary "Starting gpuclient's fake GPU hosts"
            start_gpuclient_fake_gpu_hosts
        fi
        echo_summary "Checking gpuclient"
        check_gpuclient
    fi

    if [[ "$1" == "unstack" ]]; then
        unstack_gpuclient
    fi

    if [[ "$1" == "clean" ]]; then
        clean_gpuclient
    fi
fi

# Restore xtrace
$_XTRACE_GPUCLIENT
