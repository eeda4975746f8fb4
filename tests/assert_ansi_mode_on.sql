-- joinery runs every target with ANSI mode on (DESIGN.md): harness/dbt.py keeps it on for the
-- session target, profiles.yml sets it on Thrift targets. Returns a row when it is off.
with

session_conf as (
    select '${spark.sql.ansi.enabled}' as ansi_enabled
)

select ansi_enabled
from session_conf
where ansi_enabled != 'true'
